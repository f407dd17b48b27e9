// Package signing closes the producer trust boundary of the Watermill
// face: a [Signer] signs each message a trusted producer publishes and
// verifies each one a handler consumes, before anything is claimed, so
// that a producer without the secret cannot pre-empt another's
// idempotency key, move a signed message to another topic (another
// environment's included) or replay it once its record is gone. Package
// consume registers the verification (RouterConfig.Signer) and holds
// [ErrBadSignature] permanent, so a message that is unsigned, signed for
// something else or signed too long ago is parked in the poison topic.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// MetadataSignature is the metadata field that carries a message's
// signature (see [Signer]): the HMAC-SHA256, in unpadded base64url.
const MetadataSignature = "idempotency_signature"

// MetadataSignedAt is the metadata field that carries the time a message
// was signed, in Unix milliseconds (decimal), as the signature covers it.
const MetadataSignedAt = "idempotency_signed_at"

// metadataKey is the metadata field of a message's idempotency key,
// package consume's MetadataKey: the key the signature covers.
const metadataKey = "idempotency_key"

// MinSecretLen is the shortest secret [New] takes, in bytes: that of the
// HMAC-SHA256 key it becomes.
const MinSecretLen = 32

// DefaultMaxAge is Config.MaxAge when it is zero: the receiver's default
// TTL ([receiver.DefaultTTL]), the window within which it recognises a
// duplicate.
const DefaultMaxAge = receiver.DefaultTTL

// ClockSkew is how far after the verifier's clock a signing time may be:
// a producer's clock a little ahead is not a forgery. A time further
// ahead is refused like a bad signature.
const ClockSkew = time.Minute

// ErrBadSignature means a message is unsigned, not signed by a secret of
// the [Signer] that checks it for the topic it is on, or signed longer
// ago than the Signer's max age. Redelivery cannot fix it (package
// consume's Permanent).
var ErrBadSignature = errors.New("bad_signature: no valid signature of a trusted producer")

// signatureVersion begins every signed text, so that a later scheme can
// never verify against this one, nor this one against an earlier.
const signatureVersion = "onceflow-signature-v2"

// Config configures a [Signer]. Its zero value, Secrets aside, is the
// production default: [NewSigner] fills the other fields.
type Config struct {
	// Secrets are the HMAC-SHA256 keys: the first signs, each verifies,
	// so that they can be rotated. Required; each at least MinSecretLen
	// bytes.
	Secrets [][]byte
	// MaxAge is how long a signature holds: a message signed longer ago
	// is refused with ErrBadSignature. Keep it at most the receiver's TTL,
	// so that a verbatim copy of a signed message is either answered as
	// the duplicate it is or refused, never run again once its record has
	// expired; and above the longest a message may wait on the broker
	// before its first delivery, or such a message is refused too.
	// Default DefaultMaxAge.
	MaxAge time.Duration
	// TopicPrefix is what the publisher that [Signer.Publisher] wraps,
	// and the subscribers of the router that [Signer.Middleware] runs in,
	// prepend to a topic on the broker (a transport's topic prefix): both
	// sign and verify TopicPrefix + topic, the topic as it is on the
	// broker, so that a message signed for one environment's topic never
	// verifies on another's. Empty when topics are not prefixed.
	TopicPrefix string
	// Now is the clock signing times are written and checked with,
	// called concurrently. Default time.Now.
	Now func() time.Time
}

// Signer closes the producer trust boundary: whoever can publish to a
// topic can otherwise send a message with another's idempotency key first,
// so that the real message is refused as a reused key and its effect never
// happens.
//
// A trusted producer signs each message with a secret it shares with the
// service ([Signer.Sign], or [Signer.Publisher] around its publisher): an
// HMAC-SHA256 of the topic as it is on the broker (Config.TopicPrefix
// included), the message UUID, its idempotency key (metadata
// idempotency_key, package consume's MetadataKey), the time it signs
// ([MetadataSignedAt]) and the SHA-256 of its payload, in
// [MetadataSignature]. The handlers verify it ([Signer.Middleware], which
// package consume's Install registers when RouterConfig.Signer is set)
// before anything is claimed: a message that is unsigned, whose topic,
// UUID, key, signing time or payload is not the one signed, that was
// signed more than Config.MaxAge ago or more than [ClockSkew] ahead,
// fails with [ErrBadSignature], which is permanent, and is parked in the
// poison topic. So a producer without the secret cannot take a key, nor
// move a signed message to another topic or another environment's broker,
// nor change its payload; it can only publish a signed message again,
// verbatim, within its max age, which the receiver answers as the
// duplicate it is. The age is only as exact as the producers' and the
// verifiers' clocks agree.
//
// A key a route derives from other metadata (a tenant header in a
// composite key, say) is not covered: derive it from the payload, or
// scope it by an identity the broker authenticates.
//
// It holds several secrets to rotate them: it signs with the first and
// accepts any, trying each in turn. Add the new secret second everywhere,
// then first, then drop the old one once no message it signed can be
// within the max age. Give each environment a secret of its own: the
// topic binds a signature to one broker topic, the secret to the producers
// that share it. Safe for concurrent use.
type Signer struct {
	secrets [][]byte
	maxAge  time.Duration
	prefix  string
	now     func() time.Time
}

// New returns the signer of secrets with Config's defaults: it signs with
// the first and verifies with each, topics as given, for DefaultMaxAge.
// See [NewSigner].
func New(secrets ...[]byte) (*Signer, error) { return NewSigner(Config{Secrets: secrets}) }

// NewSigner returns the signer cfg configures, its zero fields filled with
// their defaults. It refuses no secret, a secret shorter than
// [MinSecretLen] and a negative max age; its errors never show a secret.
func NewSigner(cfg Config) (*Signer, error) {
	if len(cfg.Secrets) == 0 {
		return nil, errors.New("no secret")
	}
	if cfg.MaxAge < 0 {
		return nil, fmt.Errorf("max age %v: want a positive duration, or zero for %v", cfg.MaxAge, DefaultMaxAge)
	}
	s := &Signer{secrets: make([][]byte, len(cfg.Secrets)), maxAge: cfg.MaxAge, prefix: cfg.TopicPrefix, now: cfg.Now}
	for i, secret := range cfg.Secrets {
		if len(secret) < MinSecretLen {
			return nil, fmt.Errorf("secret %d is %d bytes long: use at least %d", i+1, len(secret), MinSecretLen)
		}
		s.secrets[i] = append([]byte(nil), secret...)
	}
	if s.maxAge == 0 {
		s.maxAge = DefaultMaxAge
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Sign writes into msg's metadata the time now and the signature of msg
// published to topic, as the broker names it (no prefix is added), under
// the first secret. Sign it after the last change to its UUID, key or
// payload, and as it is published: its age counts from now.
func (s *Signer) Sign(topic string, msg *message.Message) {
	signedAt := strconv.FormatInt(s.now().UnixMilli(), 10)
	msg.Metadata.Set(MetadataSignedAt, signedAt)
	msg.Metadata.Set(MetadataSignature, base64.RawURLEncoding.EncodeToString(signature(s.secrets[0], topic, msg, signedAt)))
}

// Verify returns nil when msg, consumed from topic as the broker names it
// (no prefix is added), carries the signature of one of the secrets, made
// at most the max age ago and at most [ClockSkew] ahead; otherwise an
// error wrapping [ErrBadSignature] that says which. A signature without a
// signing time, as an earlier format made, is refused: its age cannot be
// known. The age is checked only once the signature holds, so an error
// that says a signature expired is about an authentic message. The
// comparison takes the same time however much of a signature matches.
func (s *Signer) Verify(topic string, msg *message.Message) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("message %s on topic %q: %w: %s", msg.UUID, topic, ErrBadSignature, fmt.Sprintf(format, args...))
	}
	raw := msg.Metadata.Get(MetadataSignature)
	if raw == "" {
		return refuse("no %s", MetadataSignature)
	}
	got, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return refuse("%s is not base64url", MetadataSignature)
	}
	signedAt := msg.Metadata.Get(MetadataSignedAt)
	if signedAt == "" {
		return refuse("no %s: a signature without a signing time (an earlier format) is refused", MetadataSignedAt)
	}
	ms, err := strconv.ParseInt(signedAt, 10, 64)
	if err != nil {
		return refuse("%s=%q is not Unix milliseconds", MetadataSignedAt, signedAt)
	}
	if !s.signedByOne(got, topic, msg, signedAt) {
		return refuse("no secret signed this topic, uuid, key, signing time and payload")
	}
	switch age := s.now().Sub(time.UnixMilli(ms)); {
	case age > s.maxAge:
		return refuse("signature expired: signed %v ago, max age %v", age.Round(time.Second), s.maxAge)
	case -age > ClockSkew:
		return refuse("signed %v ahead of this clock, more than the clock skew allowed, %v", (-age).Round(time.Second), ClockSkew)
	}
	return nil
}

// signedByOne reports whether got is msg's signature on topic at signedAt
// under one of the secrets, trying each.
func (s *Signer) signedByOne(got []byte, topic string, msg *message.Message, signedAt string) bool {
	for _, secret := range s.secrets {
		if hmac.Equal(got, signature(secret, topic, msg, signedAt)) {
			return true
		}
	}
	return false
}

// signature is the HMAC-SHA256 under secret of the version, then topic,
// UUID, key and signing time, each after its length, then the payload's
// SHA-256: no two messages that differ in one of them have the same
// signed text.
func signature(secret []byte, topic string, msg *message.Message, signedAt string) []byte {
	mac := hmac.New(sha256.New, secret)
	for _, part := range []string{signatureVersion, topic, msg.UUID, msg.Metadata.Get(metadataKey), signedAt} {
		writePart(mac, part)
	}
	payload := sha256.Sum256(msg.Payload)
	mac.Write(payload[:])
	return mac.Sum(nil)
}

// writePart writes part to h after its length, 8 bytes big-endian.
func writePart(h hash.Hash, part string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(part)))
	h.Write(n[:])
	h.Write([]byte(part))
}
