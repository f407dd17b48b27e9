package consume

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

var (
	errTransient = errors.New("transient failure")
	errPublish   = errors.New("broker unavailable")
)

// failOnceThenCount consumes "in": its first attempt fails, later ones count
// an effect. It returns the counters.
func failOnceThenCount(t *testing.T, mw message.HandlerMiddleware) (attempts, effects int32) {
	t.Helper()
	ps := newPubSub(t, true)
	router := newRouter(t)
	var a, e atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error {
		if a.Add(1) == 1 {
			return errTransient
		}
		e.Add(1)
		return nil
	})
	router.AddMiddleware(mw)
	run(t, router)
	publish(t, ps, "in", message.NewMessage("msg-1", []byte(`{"payment_id":"p-1"}`))) // returns once acked
	return a.Load(), e.Load()
}

// The defect this package exists to avoid: watermill's Deduplicator marks a
// message seen before the handler runs and never forgets it when the
// handler fails, so the redelivery is acked as a duplicate and the message
// is lost. The receiver releases the claim and processes the redelivery.
func TestFailedHandlerIsProcessedOnRedelivery(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	onceAttempts, onceEffects := failOnceThenCount(t, Middleware(r))

	repo, err := middleware.NewMapExpiringKeyRepository(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dedup := &middleware.Deduplicator{KeyFactory: middleware.NewMessageHasherSHA256(math.MaxInt64), Repository: repo}
	wmAttempts, wmEffects := failOnceThenCount(t, dedup.Middleware)

	t.Logf("onceflow receiver: effects=%d after redelivery (attempts=%d); watermill Deduplicator: effects=%d (message lost, attempts=%d)",
		onceEffects, onceAttempts, wmEffects, wmAttempts)
	if onceAttempts != 2 || onceEffects != 1 {
		t.Errorf("onceflow receiver: attempts=%d effects=%d, want 2 attempts and 1 effect", onceAttempts, onceEffects)
	}
	if wmAttempts != 1 || wmEffects != 0 {
		t.Errorf("watermill Deduplicator: attempts=%d effects=%d, want 1 attempt and 0 effects (the known loss)", wmAttempts, wmEffects)
	}
}

func TestConcurrentCopiesHaveOneEffect(t *testing.T) {
	const copies = 50
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, false) // publish all copies at once
	router := newRouter(t)

	// Every other copy must have been turned away while the first runs.
	var mu sync.Mutex
	rejected := map[string]bool{}
	allRejected := make(chan struct{})
	trackRejections := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if errors.Is(err, receiver.ErrInProgress) {
				mu.Lock()
				if !rejected[msg.UUID] {
					rejected[msg.UUID] = true
					if len(rejected) == copies-1 {
						close(allRejected)
					}
				}
				mu.Unlock()
			}
			return out, err
		}
	}
	var effects atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error {
		effects.Add(1)
		<-allRejected
		return nil
	})
	router.AddMiddleware(trackRejections, Middleware(r))
	run(t, router)

	msgs := make([]*message.Message, copies)
	for i := range msgs {
		msgs[i] = keyed(fmt.Sprintf("copy-%d", i), "payment-1", `{"payment_id":"payment-1"}`)
	}
	publish(t, ps, "in", msgs...)
	rec.Await(t, "every copy to be acked", func() bool {
		return rec.Count(receiver.OutcomeProcessed)+rec.Count(receiver.OutcomeDuplicate) == copies
	})
	if effects.Load() != 1 || rec.Count(receiver.OutcomeProcessed) != 1 || rec.Count(receiver.OutcomeDuplicate) != copies-1 {
		t.Fatalf("effects=%d processed=%d duplicates=%d; want 1, 1, %d",
			effects.Load(), rec.Count(receiver.OutcomeProcessed), rec.Count(receiver.OutcomeDuplicate), copies-1)
	}
}

func TestTwoHandlersOnOneTopicEachProcessOnce(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	router := newRouter(t)
	var charged, notified atomic.Int32
	router.AddConsumerHandler("charge", "payments", ps, func(msg *message.Message) error {
		if _, ok := receiver.TokenFromContext(msg.Context()); !ok {
			t.Error("handler runs without the fencing token in msg.Context()")
		}
		charged.Add(1)
		return nil
	})
	router.AddConsumerHandler("notify", "payments", ps, func(*message.Message) error { notified.Add(1); return nil })
	router.AddMiddleware(Middleware(r))
	run(t, router)

	for range 2 {
		publish(t, ps, "payments", keyed("msg-1", "payment-1", "p-1")) // returns once both acked
	}
	if charged.Load() != 1 || notified.Load() != 1 {
		t.Fatalf("charged=%d notified=%d, want each handler to run once", charged.Load(), notified.Load())
	}
	if rec.Count(receiver.OutcomeProcessed) != 2 || rec.Count(receiver.OutcomeDuplicate) != 2 {
		t.Fatalf("outcomes %v, want 2 processed and 2 duplicates", rec.Outcomes())
	}
}

// Outside a router there is no handler name to scope keys by: the
// middleware refuses rather than share keys across handlers.
func TestMiddlewareNeedsHandlerName(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	h := Middleware(r)(func(*message.Message) ([]*message.Message, error) {
		t.Error("handler ran without a scope")
		return nil, nil
	})
	if _, err := h(message.NewMessage("m-1", nil)); !errors.Is(err, receiver.ErrNoKey) {
		t.Fatalf("err = %v, want ErrNoKey", err)
	}
}
