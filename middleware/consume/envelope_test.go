package consume

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/receiver"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	in := []*message.Message{message.NewMessage("a", []byte{0, 0xff, 'x'}), message.NewMessage("b", nil)}
	in[0].Metadata.Set("event", "PaymentCharged")
	b, err := encodeMessages(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeMessages(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("decoded %d messages, want 2", len(out))
	}
	for i, m := range out {
		if m.UUID != in[i].UUID || string(m.Payload) != string(in[i].Payload) ||
			m.Metadata.Get("event") != in[i].Metadata.Get("event") || m.Metadata.Get(MetadataReplayed) != "true" {
			t.Errorf("message %d decoded as %s %q %v", i, m.UUID, m.Payload, m.Metadata)
		}
	}
	if in[0].Metadata.Get(MetadataReplayed) != "" {
		t.Error("encoding marked the original message")
	}
}

// Records written by earlier releases must stay readable for their TTL:
// this is a version 1 record exactly as it is stored.
func TestEnvelopeVersion1StaysReadable(t *testing.T) {
	stored := `{"v":1,"messages":[{"uuid":"charged-1","metadata":{"event":"PaymentCharged"},"payload":"AAH+/w=="},{"uuid":"e","payload":null}],"added_later":true}`
	out, err := decodeMessages([]byte(stored))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].UUID != "charged-1" || string(out[0].Payload) != "\x00\x01\xfe\xff" ||
		out[0].Metadata.Get("event") != "PaymentCharged" || out[1].UUID != "e" {
		t.Fatalf("decoded %v", out)
	}
}

func TestEnvelopeEmptyAndUnreadable(t *testing.T) {
	if out, err := decodeMessages(nil); err != nil || out != nil {
		t.Fatalf("empty result decoded as %v, %v; want no messages", out, err)
	}
	if b, _ := encodeMessages(nil); string(b) != `{"v":1}` {
		t.Fatalf("no messages encoded as %s", b)
	}
	for _, bad := range []string{`not json`, `{"v":2,"messages":[]}`, `{}`} {
		if _, err := decodeMessages([]byte(bad)); !errors.Is(err, receiver.ErrUnreadableResult) || !Permanent(err) {
			t.Errorf("decoding %s: err = %v, want a permanent ErrUnreadableResult", bad, err)
		}
	}
}
