package consume

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// Metadata names used by the Watermill face.
const (
	// MetadataKey is the metadata field that carries a message's
	// idempotency key. Publishers set it to a domain identity (a payment
	// id, say) so that re-published copies with new UUIDs still match.
	MetadataKey = "idempotency_key"
	// MetadataReplayed is set to "true" on produced messages that a
	// duplicate replays from the stored result.
	MetadataReplayed = "idempotent_replayed"
)

// KeyFunc derives the idempotency key of a message. It must be
// deterministic: every copy of a message must yield the same key.
type KeyFunc func(*message.Message) (string, error)

// FingerprintFunc derives the fingerprint of a message: a digest of what the
// key stands for. The same key with another fingerprint is a misuse and the
// message is not processed (see [receiver.ErrFingerprintMismatch]).
type FingerprintFunc func(*message.Message) []byte

// KeyFromMetadata uses the metadata field name, or the message UUID when the
// field is absent or empty. The default key is KeyFromMetadata(MetadataKey).
func KeyFromMetadata(name string) KeyFunc {
	return func(msg *message.Message) (string, error) {
		if k := msg.Metadata.Get(name); k != "" {
			return k, nil
		}
		if msg.UUID != "" {
			return msg.UUID, nil
		}
		return "", fmt.Errorf("%w: message has neither metadata %q nor a uuid", receiver.ErrNoKey, name)
	}
}

// KeyFromContentHash uses the hex SHA-256 of the payload, so that messages
// with equal payloads are one message whatever their UUIDs.
func KeyFromContentHash() KeyFunc {
	return func(msg *message.Message) (string, error) {
		return hexSHA256(msg.Payload), nil
	}
}

// CompositeKey combines the keys of parts, in order, into one key: a JSON
// array of the parts as strings, ["payment-1","tenant-a"]. A part that is
// not valid UTF-8 (metadata can carry any bytes) is written as an object
// with its hex, {"hex":"c6"}, since a JSON string would replace its bytes
// with U+FFFD. So the combination is unambiguous: ("a:b", "c") and
// ("a", "b:c") differ, and so do ("\xc6") and ("\xb0"). It fails if any
// part fails.
func CompositeKey(parts ...KeyFunc) KeyFunc {
	return func(msg *message.Message) (string, error) {
		keys := make([]any, len(parts))
		for i, part := range parts {
			k, err := part(msg)
			if err != nil {
				return "", fmt.Errorf("composite key part %d: %w", i, err)
			}
			keys[i] = k
			if !utf8.ValidString(k) {
				keys[i] = binaryPart{Hex: hex.EncodeToString([]byte(k))}
			}
		}
		b, err := json.Marshal(keys)
		if err != nil {
			return "", fmt.Errorf("composite key: %w", err)
		}
		return string(b), nil
	}
}

// binaryPart is how CompositeKey writes a part that is not valid UTF-8.
type binaryPart struct {
	Hex string `json:"hex"`
}

// PayloadFingerprint is the default FingerprintFunc: the SHA-256 of the
// payload.
func PayloadFingerprint(msg *message.Message) []byte {
	sum := sha256.Sum256(msg.Payload)
	return sum[:]
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
