// Package signing closes the producer trust boundary of the Watermill
// face: a [Signer] signs each message a trusted producer publishes and
// verifies each one a handler consumes, before anything is claimed, so
// that a producer without the secret cannot pre-empt another's
// idempotency key. Package consume registers the verification
// (RouterConfig.Signer) and holds [ErrBadSignature] permanent, so an
// unsigned message is parked in the poison topic.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"github.com/ThreeDotsLabs/watermill/message"
)

// MetadataSignature is the metadata field that carries a message's
// signature (see [Signer]).
const MetadataSignature = "idempotency_signature"

// metadataKey is the metadata field of a message's idempotency key,
// package consume's MetadataKey: the key the signature covers.
const metadataKey = "idempotency_key"

// MinSecretLen is the shortest secret [New] takes, in bytes: that of the
// HMAC-SHA256 key it becomes.
const MinSecretLen = 32

// ErrBadSignature means a message is unsigned, or not signed by a secret
// of the [Signer] that checks it. Redelivery cannot fix it (package
// consume's Permanent).
var ErrBadSignature = errors.New("bad_signature: message not signed by a trusted producer")

// signatureVersion begins every signed text, so that a later scheme can
// never verify against this one.
const signatureVersion = "onceflow-signature-v1"

// Signer closes the producer trust boundary: whoever can publish to a
// topic can otherwise send a message with another's idempotency key first,
// so that the real message is refused as a reused key and its effect never
// happens.
//
// A trusted producer signs each message with a secret it shares with the
// service ([Signer.Sign], or [Signer.Publisher] around its publisher): an
// HMAC-SHA256 of the topic, the message UUID, its idempotency key (metadata
// idempotency_key, package consume's MetadataKey) and the SHA-256 of its
// payload, in [MetadataSignature]. The handlers verify it
// ([Signer.Middleware], which package consume's Install registers when
// RouterConfig.Signer is set) before anything is claimed: a message that
// is unsigned, or whose topic, UUID, key or payload is not the one signed,
// fails with [ErrBadSignature], which is permanent, and is parked in the
// poison topic. So a producer without the secret cannot take a key, nor
// move a signed message to another topic, nor change its payload; it can
// only publish a signed message again, verbatim, which the receiver
// answers as the duplicate it is.
//
// A key a route derives from other metadata (a tenant header in a
// composite key, say) is not covered: derive it from the payload, or
// scope it by an identity the broker authenticates.
//
// It holds several secrets to rotate them: it signs with the first and
// accepts any. Add the new secret second everywhere, then first, then
// drop the old one. Safe for concurrent use.
type Signer struct {
	secrets [][]byte
}

// New returns the signer of secrets: it signs with the first and verifies
// with each. It refuses none, and a secret shorter than [MinSecretLen];
// its errors never show a secret.
func New(secrets ...[]byte) (*Signer, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no secret")
	}
	s := &Signer{secrets: make([][]byte, len(secrets))}
	for i, secret := range secrets {
		if len(secret) < MinSecretLen {
			return nil, fmt.Errorf("secret %d is %d bytes long: use at least %d", i+1, len(secret), MinSecretLen)
		}
		s.secrets[i] = append([]byte(nil), secret...)
	}
	return s, nil
}

// Sign writes into msg's metadata the signature of msg published to topic,
// under the first secret. Sign it after the last change to its UUID, key
// or payload.
func (s *Signer) Sign(topic string, msg *message.Message) {
	msg.Metadata.Set(MetadataSignature, base64.RawURLEncoding.EncodeToString(signature(s.secrets[0], topic, msg)))
}

// Verify returns nil when msg, consumed from topic, carries the signature
// of one of the secrets, and an error wrapping [ErrBadSignature]
// otherwise. The comparison takes the same time however much of a
// signature matches.
func (s *Signer) Verify(topic string, msg *message.Message) error {
	raw := msg.Metadata.Get(MetadataSignature)
	if raw == "" {
		return fmt.Errorf("message %s on topic %q: %w: no %s", msg.UUID, topic, ErrBadSignature, MetadataSignature)
	}
	got, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return fmt.Errorf("message %s on topic %q: %w: %s is not base64url", msg.UUID, topic, ErrBadSignature, MetadataSignature)
	}
	for _, secret := range s.secrets {
		if hmac.Equal(got, signature(secret, topic, msg)) {
			return nil
		}
	}
	return fmt.Errorf("message %s on topic %q: %w: no secret signed this topic, uuid, key and payload", msg.UUID, topic, ErrBadSignature)
}

// Publisher returns pub signing every message with the topic it is
// published to. A nil Signer returns pub itself.
func (s *Signer) Publisher(pub message.Publisher) message.Publisher {
	if s == nil {
		return pub
	}
	return signingPublisher{Publisher: pub, s: s}
}

type signingPublisher struct {
	message.Publisher
	s *Signer
}

func (p signingPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		p.s.Sign(topic, msg)
	}
	return p.Publisher.Publish(topic, msgs...)
}

// Middleware verifies each message against the topic the handler consumes
// it from ([message.SubscribeTopicFromCtx]) before h runs: a message that
// fails [Signer.Verify] returns its error and h never sees it.
func (s *Signer) Middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		if err := s.Verify(message.SubscribeTopicFromCtx(msg.Context()), msg); err != nil {
			return nil, err
		}
		return h(msg)
	}
}

// signature is the HMAC-SHA256 under secret of the version, then topic,
// UUID and key, each after its length, then the payload's SHA-256: no two
// messages that differ in one of them have the same signed text.
func signature(secret []byte, topic string, msg *message.Message) []byte {
	mac := hmac.New(sha256.New, secret)
	for _, part := range []string{signatureVersion, topic, msg.UUID, msg.Metadata.Get(metadataKey)} {
		writePart(mac, part)
	}
	payload := sha256.Sum256(msg.Payload)
	mac.Write(payload[:])
	return mac.Sum(nil)
}

// writePart writes part to h after its length.
func writePart(h hash.Hash, part string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(part)))
	h.Write(n[:])
	h.Write([]byte(part))
}
