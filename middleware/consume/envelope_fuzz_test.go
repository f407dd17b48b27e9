package consume

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// FuzzMessageEnvelope checks the stored produced-messages envelope both
// ways. Reading arbitrary stored bytes either fails with a Permanent
// ErrUnreadableResult or gives messages marked replayed that re-encode to
// an envelope decoding to the same messages. Encoding a message with any
// UUID, metadata and payload decodes to it: the payload byte for byte, and
// the UUID and metadata exactly when they are valid UTF-8 (else with each
// invalid byte as U+FFFD, as envelope.go says).
//
//	go test -run '^$' -fuzz '^FuzzMessageEnvelope$' ./middleware/consume/
func FuzzMessageEnvelope(f *testing.F) {
	f.Add([]byte(`{"v":1,"messages":[{"uuid":"a","metadata":{"k":"v"},"payload":"AAH+/w=="}]}`),
		"uuid-1", "event", "PaymentCharged", []byte(`{"payment_id":"p"}`))
	f.Fuzz(func(t *testing.T, stored []byte, uuid, name, value string, payload []byte) {
		msgs, err := decodeMessages(stored)
		if err != nil {
			if !errors.Is(err, receiver.ErrUnreadableResult) || !Permanent(err) {
				t.Fatalf("decoding %q: %v, want a permanent ErrUnreadableResult", stored, err)
			}
		} else {
			for _, m := range msgs {
				if m.Metadata.Get(MetadataReplayed) != "true" {
					t.Fatalf("decoding %q: message %q is not marked replayed", stored, m.UUID)
				}
			}
			again := roundTripMessages(t, msgs)
			for i := range msgs {
				if !sameMessage(msgs[i], again[i]) {
					t.Fatalf("decoding %q: message %d is %+v, re-encoded and decoded %+v", stored, i, msgs[i], again[i])
				}
			}
		}

		in := message.NewMessage(uuid, payload)
		in.Metadata.Set(name, value)
		out := roundTripMessages(t, []*message.Message{in})[0]
		wantMeta := message.Metadata{receivertest.AsJSONString(name): receivertest.AsJSONString(value)}
		wantMeta[MetadataReplayed] = "true" // a replay says so, whatever the handler set
		if !bytes.Equal(out.Payload, payload) || out.UUID != receivertest.AsJSONString(uuid) || !maps.Equal(out.Metadata, wantMeta) {
			t.Fatalf("message %q %v %q decoded as %q %v %q", uuid, in.Metadata, payload, out.UUID, out.Metadata, out.Payload)
		}
		if in.Metadata.Get(MetadataReplayed) != "" && name != MetadataReplayed {
			t.Fatal("encoding marked the original message replayed")
		}
	})
}

// roundTripMessages encodes msgs, decodes them, and checks the count.
func roundTripMessages(t *testing.T, msgs []*message.Message) []*message.Message {
	t.Helper()
	b, err := encodeMessages(msgs)
	if err != nil {
		t.Fatalf("encoding %d messages: %v", len(msgs), err)
	}
	out, err := decodeMessages(b)
	if err != nil || len(out) != len(msgs) {
		t.Fatalf("decoding %s: %d messages, %v; want %d", b, len(out), err, len(msgs))
	}
	return out
}

func sameMessage(a, b *message.Message) bool {
	return a.UUID == b.UUID && bytes.Equal(a.Payload, b.Payload) && maps.Equal(a.Metadata, b.Metadata)
}
