package consume

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// The handler of a message finds its effect key in the message's context:
// the same on the retry after it failed, and for a copy of the message.
func TestEffectKeyInTheMessageContext(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	router := newRouter(t)
	keys := make(chan string, 3)
	var runs atomic.Int32
	router.AddConsumerHandler("charge", "payments", ps, func(msg *message.Message) error {
		k, _ := receiver.EffectKey(msg.Context(), "")
		keys <- k
		if runs.Add(1) == 1 {
			return errors.New("fails once its effect is done")
		}
		return nil
	})
	if err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Retry: &Retry{Interval: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	run(t, router)
	publish(t, ps, "payments", keyed("copy-1", "payment-1", "p"))
	first, retried := <-keys, <-keys
	if first == "" || first != retried {
		t.Fatalf("keys %q then %q: want one effect key for the run and its retry", first, retried)
	}
	want := receivertest.EffectKey(t, "charge", "payment-1", "")
	if first != want {
		t.Fatalf("key %q, want that of handler charge and key payment-1, %q", first, want)
	}
}
