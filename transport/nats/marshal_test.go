package nats

import (
	"testing"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/components/requeuer"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/nats-io/nats.go"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The JetStream message id is the idempotency key, or the UUID of a
// message without one or of a poisoned copy; a redriven message's names
// the parked message and its UUID, so that the stream does not drop it as
// a copy of its key's first publish; a requeued one's, its topic, count
// of requeues and UUID, for each hop.
func TestNATSMessageID(t *testing.T) {
	m := marshaler{keyEntry: transporttest.KeyMetadata}
	msg := func(md ...string) *message.Message {
		x := message.NewMessage("uuid-1", nil)
		for i := 0; i < len(md); i += 2 {
			x.Metadata.Set(md[i], md[i+1])
		}
		return x
	}
	for name, c := range map[string]struct {
		msg  *message.Message
		want string
	}{
		"keyed":    {msg(transporttest.KeyMetadata, "pay-1"), "pay-1"},
		"no key":   {msg(), "uuid-1"},
		"poisoned": {msg(transporttest.KeyMetadata, "pay-1", wmmw.PoisonedTopicKey, "orders.placed"), "uuid-1"},
		"redriven": {msg(transporttest.KeyMetadata, "pay-1", poison.RedrivenFromKey, "42"), "redriven:42:uuid-1"},
		"requeued": {msg(transporttest.KeyMetadata, "pay-1", consume.RequeueTopicKey, "s", requeuer.RetriesKey, "2"), "requeue:s:2:uuid-1"},
	} {
		nm, err := m.Marshal("s", c.msg)
		if err != nil {
			t.Fatal(err)
		}
		if got := nm.Header.Get(nats.MsgIdHdr); got != c.want {
			t.Errorf("%s: Nats-Msg-Id = %q, want %q", name, got, c.want)
		}
	}
}

// A message from a producer outside Watermill is read, not refused: a
// header sent twice is joined, and without a UUID header the message id
// stands in.
func TestNATSUnmarshalForeign(t *testing.T) {
	nm := nats.NewMsg("s")
	nm.Data = []byte("body")
	nm.Header.Add("attempt", "1")
	nm.Header.Add("attempt", "2")
	nm.Header.Set(transporttest.KeyMetadata, "pay-9")
	nm.Header.Set(nats.MsgIdHdr, "pay-9")
	msg, err := marshaler{keyEntry: transporttest.KeyMetadata}.Unmarshal(nm)
	if err != nil {
		t.Fatal(err)
	}
	if msg.UUID != "pay-9" || string(msg.Payload) != "body" || msg.Metadata.Get("attempt") != "1, 2" ||
		msg.Metadata.Get(transporttest.KeyMetadata) != "pay-9" || len(msg.Metadata) != 2 {
		t.Errorf("got %s %q %v", msg.UUID, msg.Payload, msg.Metadata)
	}
	if _, err := (&wmnats.NATSMarshaler{}).Unmarshal(nm); err == nil {
		t.Error("watermill-nats now reads a header sent twice: marshaler.Unmarshal may no longer be needed")
	}
}
