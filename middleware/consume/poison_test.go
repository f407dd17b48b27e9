package consume

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// poisonAndRetry returns the documented outer middlewares: the poison queue
// takes permanent errors, the retry skips them.
func poisonAndRetry(t *testing.T, pub message.Publisher) []message.HandlerMiddleware {
	t.Helper()
	poison, err := middleware.PoisonQueueWithFilter(pub, "poison", Permanent)
	if err != nil {
		t.Fatal(err)
	}
	retry := middleware.Retry{
		MaxRetries:      5,
		InitialInterval: time.Millisecond,
		ShouldRetry:     func(p middleware.RetryParams) bool { return !Permanent(p.Err) },
		// Timeout, inside the retry, leaves its cancelled context on the
		// message; without a reset every retry would run on it.
		ResetContextOnRetry: true,
	}
	return []message.HandlerMiddleware{poison, retry.Middleware, middleware.Timeout(time.Second)}
}

func TestFingerprintMismatchGoesToPoisonQueue(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	poisoned := collect(t, ps, "poison")
	router := newRouter(t)
	var effects atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error { effects.Add(1); return nil })
	router.AddMiddleware(poisonAndRetry(t, ps)...)
	router.AddMiddleware(Middleware(r))
	run(t, router)

	publish(t, ps, "in", keyed("msg-1", "payment-1", "amount=100"))
	publish(t, ps, "in", keyed("msg-2", "payment-1", "amount=999")) // same key, other payload

	got := receive(t, poisoned, 1)[0]
	reason := got.Metadata.Get(middleware.ReasonForPoisonedKey)
	t.Logf("poison reason: %s", reason)
	if got.UUID != "msg-2" || !strings.Contains(reason, "fingerprint_mismatch") ||
		got.Metadata.Get(middleware.PoisonedHandlerKey) != "charge" {
		t.Fatalf("poisoned %s with metadata %v, want msg-2 from charge with a fingerprint_mismatch reason", got.UUID, got.Metadata)
	}
	if effects.Load() != 1 || rec.Count(receiver.OutcomeFingerprintMismatch) != 1 {
		t.Fatalf("effects=%d mismatches=%d, want 1 and 1 (no re-execution, no retry)", effects.Load(), rec.Count(receiver.OutcomeFingerprintMismatch))
	}
}

// The retry middleware runs the receiver again on the same message: the
// first attempt's released claim and its ended context must not leak into
// the second, whether or not the retry resets the message's context.
func TestRetryMiddlewareRetriesThroughReceiver(t *testing.T) {
	chains := map[string]func(t *testing.T, pub message.Publisher) []message.HandlerMiddleware{
		"retry alone": func(*testing.T, message.Publisher) []message.HandlerMiddleware {
			return []message.HandlerMiddleware{middleware.Retry{MaxRetries: 5, InitialInterval: time.Millisecond}.Middleware}
		},
		"poison, retry, timeout": poisonAndRetry,
	}
	for name, chain := range chains {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, rec := receivertest.NewReceiver(t, receiver.Config{})
			ps := newPubSub(t, true)
			router := newRouter(t)
			var deliveries, attempts atomic.Int32
			countDeliveries := func(h message.HandlerFunc) message.HandlerFunc {
				return func(msg *message.Message) ([]*message.Message, error) {
					deliveries.Add(1)
					return h(msg)
				}
			}
			router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error {
				if attempts.Add(1) == 1 {
					return errTransient
				}
				return nil
			})
			router.AddMiddleware(countDeliveries)
			router.AddMiddleware(chain(t, ps)...)
			router.AddMiddleware(Middleware(r))
			run(t, router)

			publish(t, ps, "in", keyed("msg-1", "payment-1", "p-1"))
			if deliveries.Load() != 1 || attempts.Load() != 2 {
				t.Fatalf("deliveries=%d attempts=%d, want the retry to succeed within 1 delivery", deliveries.Load(), attempts.Load())
			}
			if rec.Count(receiver.OutcomeFailed) != 1 || rec.Count(receiver.OutcomeProcessed) != 1 || rec.Total() != 2 {
				t.Fatalf("outcomes %v, want one failed and one processed", rec.Outcomes())
			}
		})
	}
}

func TestMessageOptions(t *testing.T) {
	cases := []struct {
		name        string
		opts        []Option
		first, then *message.Message
		wantEffects int32
		wantPoison  bool
	}{
		{name: "default key is the uuid", first: message.NewMessage("m-1", []byte("p")),
			then: message.NewMessage("m-2", []byte("p")), wantEffects: 2},
		{name: "default key prefers metadata", first: keyed("m-1", "k", "p"), then: keyed("m-2", "k", "p"), wantEffects: 1},
		{name: "content hash key", opts: []Option{WithKey(KeyFromContentHash())},
			first: message.NewMessage("m-1", []byte("p")), then: message.NewMessage("m-2", []byte("p")), wantEffects: 1},
		{name: "default fingerprint catches a changed payload", first: keyed("m-1", "k", "p"), then: keyed("m-2", "k", "q"),
			wantEffects: 1, wantPoison: true},
		{name: "custom fingerprint", opts: []Option{WithFingerprint(func(*message.Message) []byte { return nil })},
			first: keyed("m-1", "k", "p"), then: keyed("m-2", "k", "q"), wantEffects: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := receivertest.NewReceiver(t, receiver.Config{})
			ps := newPubSub(t, true)
			poisoned := collect(t, ps, "poison")
			router := newRouter(t)
			var effects atomic.Int32
			router.AddConsumerHandler("h", "in", ps, func(*message.Message) error { effects.Add(1); return nil })
			router.AddMiddleware(poisonAndRetry(t, ps)...)
			router.AddMiddleware(Middleware(r, tc.opts...))
			run(t, router)

			publish(t, ps, "in", tc.first)
			publish(t, ps, "in", tc.then)
			if effects.Load() != tc.wantEffects {
				t.Errorf("effects = %d, want %d", effects.Load(), tc.wantEffects)
			}
			if gotPoison := len(poisoned) > 0; gotPoison != tc.wantPoison {
				t.Errorf("poisoned = %v, want %v", gotPoison, tc.wantPoison)
			}
		})
	}
}

// A handler named as the HTTP face's scope never runs: its keys would name
// the HTTP face's records, so its messages go to the poison topic.
func TestHandlerNamedHTTPIsRefused(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	poisoned := collect(t, ps, "poison")
	router := newRouter(t)
	var effects atomic.Int32
	router.AddConsumerHandler(idempotencykey.Scope, "in", ps, func(*message.Message) error { effects.Add(1); return nil })
	router.AddMiddleware(poisonAndRetry(t, ps)...)
	router.AddMiddleware(Middleware(r))
	run(t, router)

	publish(t, ps, "in", keyed("msg-1", "payment-1", "p-1"))
	got := receive(t, poisoned, 1)[0]
	if reason := got.Metadata.Get(middleware.ReasonForPoisonedKey); !strings.Contains(reason, "HTTP face's scope") {
		t.Errorf("poisoned with reason %q, want it to name the HTTP face's scope", reason)
	}
	if effects.Load() != 0 || rec.Total() != 0 {
		t.Errorf("effects=%d outcomes=%d, want the handler never run and no record", effects.Load(), rec.Total())
	}
}
