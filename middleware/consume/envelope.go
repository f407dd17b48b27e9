package consume

import (
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// The Watermill face stores a handler's produced messages as a versioned
// JSON envelope:
//
//	{"v":1,"messages":[{"uuid":"…","metadata":{"k":"v"},"payload":"<base64>"}]}
//
// Records outlive deployments (for the TTL), so a newer release must still
// read what an older one stored: version 1 is never changed in place. A new
// layout gets a new "v", and decodeMessages keeps a case for every version
// still within a TTL of being written. Unknown fields are ignored. An empty
// result decodes as no messages. The UUID and metadata are JSON strings, so
// they round-trip when they are valid UTF-8; each byte that is not reads
// back as U+FFFD. Payloads round-trip byte for byte.
const envelopeVersion = 1

type envelope struct {
	V        int               `json:"v"`
	Messages []envelopeMessage `json:"messages,omitempty"`
}

type envelopeMessage struct {
	UUID     string            `json:"uuid"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Payload  []byte            `json:"payload"`
}

// emptyEnvelope is the result of a handler that produced nothing, the
// common case, encoded once. It must not be modified.
var emptyEnvelope = []byte(`{"v":1}`)

// encodeMessages stores msgs in the current envelope version.
func encodeMessages(msgs []*message.Message) ([]byte, error) {
	if len(msgs) == 0 {
		return emptyEnvelope, nil
	}
	env := envelope{V: envelopeVersion, Messages: make([]envelopeMessage, 0, len(msgs))}
	for _, m := range msgs {
		env.Messages = append(env.Messages, envelopeMessage{UUID: m.UUID, Metadata: m.Metadata, Payload: m.Payload})
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encoding produced messages: %w", err)
	}
	return b, nil
}

// decodeMessages reads an envelope of any supported version and returns its
// messages marked as replayed.
func decodeMessages(b []byte) ([]*message.Message, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%w: %w", receiver.ErrUnreadableResult, err)
	}
	switch env.V {
	case 1:
		msgs := make([]*message.Message, 0, len(env.Messages))
		for _, em := range env.Messages {
			m := message.NewMessage(em.UUID, em.Payload)
			for k, v := range em.Metadata {
				m.Metadata.Set(k, v)
			}
			m.Metadata.Set(MetadataReplayed, "true")
			msgs = append(msgs, m)
		}
		return msgs, nil
	default:
		return nil, fmt.Errorf("%w: envelope version %d is not supported", receiver.ErrUnreadableResult, env.V)
	}
}
