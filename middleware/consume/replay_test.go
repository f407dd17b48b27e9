package consume

import (
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// chargeWithOutputs consumes "in" and emits two messages on "out".
func chargeWithOutputs(effects *atomic.Int32) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		effects.Add(1)
		out := []*message.Message{
			message.NewMessage("charged-1", []byte("charged "+string(msg.Payload))),
			message.NewMessage("charged-2", []byte{0, 1, 0xfe, 0xff}),
		}
		out[0].Metadata.Set("event", "PaymentCharged")
		return out, nil
	}
}

// checkReplayed asserts that got are chargeWithOutputs' messages, replayed.
func checkReplayed(t *testing.T, got []*message.Message, payload string) {
	t.Helper()
	want := map[string]string{"charged-1": "charged " + payload, "charged-2": "\x00\x01\xfe\xff"}
	for _, m := range got {
		if want[m.UUID] != string(m.Payload) {
			t.Errorf("replayed %s with payload %q, want %q", m.UUID, m.Payload, want[m.UUID])
		}
		delete(want, m.UUID)
		if m.Metadata.Get(MetadataReplayed) != "true" {
			t.Errorf("replayed %s lacks %s=true: %v", m.UUID, MetadataReplayed, m.Metadata)
		}
		if m.UUID == "charged-1" && m.Metadata.Get("event") != "PaymentCharged" {
			t.Errorf("replayed %s lost its metadata: %v", m.UUID, m.Metadata)
		}
	}
	if len(want) != 0 {
		t.Errorf("not replayed: %v", want)
	}
}

func TestDuplicateReplaysProducedMessages(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	out := collect(t, ps, "out")
	router := newRouter(t)
	var effects atomic.Int32
	router.AddHandler("charge", "in", ps, "out", ps, chargeWithOutputs(&effects))
	router.AddMiddleware(Middleware(r))
	run(t, router)

	publish(t, ps, "in", message.NewMessage("msg-1", []byte("p-1")))
	for _, m := range receive(t, out, 2) {
		if m.Metadata.Get(MetadataReplayed) != "" {
			t.Errorf("first output %s marked replayed", m.UUID)
		}
	}
	publish(t, ps, "in", message.NewMessage("msg-1", []byte("p-1")))
	checkReplayed(t, receive(t, out, 2), "p-1")
	if effects.Load() != 1 || rec.Count(receiver.OutcomeDuplicate) != 1 {
		t.Fatalf("effects=%d duplicates=%d, want 1 and 1", effects.Load(), rec.Count(receiver.OutcomeDuplicate))
	}
	if n := rec.Replays(); n != 2 {
		t.Errorf("%d replayed messages observed, want the duplicate's 2", n)
	}
}

// The record is completed, then publishing the outputs fails (the process
// could as well have crashed): the message is nacked, and its redelivery is
// a duplicate that publishes the stored outputs. Nothing is lost
// downstream, nothing is charged twice.
func TestCrashBetweenCompleteAndPublishIsHealed(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	out := collect(t, ps, "out")
	pub := &failingPublisher{Publisher: ps}
	pub.failures.Store(1)
	router := newRouter(t)
	var effects atomic.Int32
	router.AddHandler("charge", "in", ps, "out", pub, chargeWithOutputs(&effects))
	router.AddMiddleware(Middleware(r))
	run(t, router)

	publish(t, ps, "in", message.NewMessage("msg-1", []byte("p-1"))) // returns once acked
	checkReplayed(t, receive(t, out, 2), "p-1")
	if effects.Load() != 1 || pub.calls.Load() != 2 {
		t.Fatalf("effects=%d publish calls=%d, want 1 effect and 2 publish calls", effects.Load(), pub.calls.Load())
	}
	if rec.Count(receiver.OutcomeProcessed) != 1 || rec.Count(receiver.OutcomeDuplicate) != 1 {
		t.Fatalf("outcomes %v, want one processed and one duplicate", rec.Outcomes())
	}
}
