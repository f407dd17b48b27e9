package consume

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// A payload over RouterConfig.MaxPayload goes to the poison topic at once,
// with its reason: the handler never runs, nothing is retried or claimed.
// One at the limit is handled as usual, and a handler reading the poison
// topic gets the large one.
func TestInstallPoisonsAPayloadOverTheLimit(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	poisoned := collect(t, ps, "poison")
	router := newRouter(t)
	var runs, poisonRead atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error { runs.Add(1); return nil })
	router.AddConsumerHandler("poison_reader", "poison", ps, func(*message.Message) error { poisonRead.Add(1); return nil })
	const limit = 64
	if err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Retry: &Retry{Interval: time.Millisecond}, MaxPayload: limit}); err != nil {
		t.Fatal(err)
	}
	run(t, router)

	publish(t, ps, "in", keyed("msg-big", "payment-1", strings.Repeat("x", limit+1)))
	got := receive(t, poisoned, 1)[0]
	reason := got.Metadata.Get(middleware.ReasonForPoisonedKey)
	if got.UUID != "msg-big" || !strings.Contains(reason, "payload_too_large") || !strings.Contains(reason, "65 bytes") ||
		got.Metadata.Get(PoisonClassKey) != ClassTooLarge {
		t.Fatalf("poisoned %s with reason %q (class %q), want msg-big with payload_too_large and its size", got.UUID, reason, got.Metadata.Get(PoisonClassKey))
	}
	if runs.Load() != 0 || poisonRead.Load() != 1 || rec.Total() != 0 {
		t.Fatalf("runs=%d, poison read %d, outcomes=%d: want the handler untouched, and the poison topic's handler given the message, unclaimed",
			runs.Load(), poisonRead.Load(), rec.Total())
	}

	publish(t, ps, "in", keyed("msg-fits", "payment-2", strings.Repeat("x", limit)))
	if runs.Load() != 1 || rec.Count(receiver.OutcomeProcessed) != 1 {
		t.Fatalf("runs=%d processed=%d, want the payload at the limit handled", runs.Load(), rec.Count(receiver.OutcomeProcessed))
	}
}
