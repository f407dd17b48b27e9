package consume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// counter is a middleware that counts its runs.
func counter(n *atomic.Int32) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			n.Add(1)
			return h(msg)
		}
	}
}

// Outer runs once per delivery and Inner once per run of the handler: a
// failure retried in process is one delivery of three attempts, and a
// duplicate is a delivery without a run.
func TestInstallRunsOuterPerDeliveryAndInnerPerAttempt(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	router := newRouter(t)
	var deliveries, runs, attempts atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error {
		if attempts.Add(1) <= 2 {
			return errTransient
		}
		return nil
	})
	err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Retry: &Retry{Interval: time.Millisecond},
		Outer: []message.HandlerMiddleware{counter(&deliveries)}, Inner: []message.HandlerMiddleware{counter(&runs)}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)

	publish(t, ps, "in", keyed("msg-1", "payment-1", "p-1"))
	if deliveries.Load() != 1 || runs.Load() != 3 || attempts.Load() != 3 {
		t.Fatalf("deliveries=%d runs=%d attempts=%d, want 1, 3, 3", deliveries.Load(), runs.Load(), attempts.Load())
	}
	publish(t, ps, "in", keyed("msg-2", "payment-1", "p-1")) // a copy
	if deliveries.Load() != 2 || runs.Load() != 3 || attempts.Load() != 3 {
		t.Fatalf("after the copy: deliveries=%d runs=%d attempts=%d, want 2, 3, 3", deliveries.Load(), runs.Load(), attempts.Load())
	}
	if rec.Count(receiver.OutcomeProcessed) != 1 || rec.Count(receiver.OutcomeDuplicate) != 1 {
		t.Fatalf("outcomes %v, want one processed and one duplicate", rec.Outcomes())
	}
}

// Without Retry every failed attempt goes back to the broker, which
// redelivers it.
func TestInstallWithoutRetryNacksAtOnce(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, true)
	router := newRouter(t)
	var deliveries, attempts atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error {
		if attempts.Add(1) <= 2 {
			return errTransient
		}
		return nil
	})
	err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps},
		Outer: []message.HandlerMiddleware{counter(&deliveries)}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)

	publish(t, ps, "in", keyed("msg-1", "payment-1", "p-1"))
	if deliveries.Load() != 3 || attempts.Load() != 3 {
		t.Fatalf("deliveries=%d attempts=%d, want 3 and 3", deliveries.Load(), attempts.Load())
	}
}

// refusingPublisher refuses, as the AMQP and SQL publishers do, a message
// whose context is done.
type refusingPublisher struct{ message.Publisher }

func (p refusingPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if err := m.Context().Err(); err != nil {
			return fmt.Errorf("publishing %s: %w", m.UUID, err)
		}
	}
	return p.Publisher.Publish(topic, msgs...)
}

// A domain's permanent error skips the retries and reaches the poison
// topic once, through a publisher that honours the message's context; a
// reused key does too, whatever RouterConfig.Permanent says. Each carries
// its class: malformed for Poison.Malformed's, key_reused.
func TestInstallPoisonsPermanentErrors(t *testing.T) {
	errMalformed := errors.New("malformed message")
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	// Not blocking: should a poisoned message loop, receive fails in time.
	ps := newPubSub(t, false)
	poisoned := collect(t, ps, "dead")
	router := newRouter(t)
	var attempts atomic.Int32
	router.AddConsumerHandler("charge", "in", ps, func(msg *message.Message) error {
		attempts.Add(1)
		if string(msg.Payload) == "garbage" {
			return fmt.Errorf("decoding: %w", errMalformed)
		}
		return nil
	})
	err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: refusingPublisher{ps}, Topic: "dead",
		Malformed: func(err error) bool { return errors.Is(err, errMalformed) }},
		Permanent: PermanentErrors(errMalformed), Retry: &Retry{Interval: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)

	publish(t, ps, "in", keyed("msg-1", "payment-1", "garbage"))
	got := receive(t, poisoned, 1)[0]
	if got.UUID != "msg-1" || !strings.Contains(got.Metadata.Get(middleware.ReasonForPoisonedKey), "malformed message") ||
		got.Metadata.Get(PoisonClassKey) != ClassMalformed {
		t.Fatalf("poisoned %s with metadata %v, want msg-1, malformed", got.UUID, got.Metadata)
	}
	if attempts.Load() != 1 {
		t.Fatalf("attempts = %d, want 1: a permanent error is not retried", attempts.Load())
	}

	// The pub/sub does not keep order: whichever comes second is poisoned.
	publish(t, ps, "in", keyed("msg-2", "payment-2", "amount=100"))
	publish(t, ps, "in", keyed("msg-3", "payment-2", "amount=999"))
	got = receive(t, poisoned, 1)[0]
	if got.UUID != "msg-2" && got.UUID != "msg-3" || !strings.Contains(got.Metadata.Get(middleware.ReasonForPoisonedKey), "fingerprint_mismatch") ||
		got.Metadata.Get(PoisonClassKey) != ClassKeyReused {
		t.Fatalf("poisoned %s with metadata %v, want msg-2 or msg-3, fingerprint_mismatch", got.UUID, got.Metadata)
	}
	if attempts.Load() != 2 {
		t.Fatalf("attempts = %d, want 2: the reused key never runs", attempts.Load())
	}
}

func TestInstallRefusesAnIncompleteConfig(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{Lease: 5 * time.Second})
	ps := newPubSub(t, false)
	for _, c := range []struct {
		name string
		cfg  RouterConfig
		want string
	}{
		{"no receiver", RouterConfig{Poison: &Poison{Publisher: ps}}, "missing receiver"},
		{"no poison publisher", RouterConfig{Receiver: r, Poison: &Poison{Topic: "dead"}, Timeout: time.Second}, "poison: missing publisher"},
		{"the default timeout outlives the lease", RouterConfig{Receiver: r}, "below the receiver's lease"},
		{"a timeout as long as the lease", RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Timeout: 5 * time.Second}, "below the receiver's lease"},
		{"negative retries", RouterConfig{Receiver: r, Timeout: time.Second, Retry: &Retry{Max: -2}}, "retry: max -2"},
		{"negative interval", RouterConfig{Receiver: r, Timeout: time.Second, Retry: &Retry{Interval: -time.Second}}, "interval -1s"},
		{"a handler's timeout as long as the lease", RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Timeout: time.Second,
			Handlers: map[string]HandlerConfig{"slow": {Timeout: 5 * time.Second}}}, "handler slow: timeout 5s must be below the receiver's lease"},
	} {
		err := Install(newRouter(t), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Install = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if err := Install(newRouter(t), RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Timeout: time.Second}); err != nil {
		t.Errorf("Install with a timeout below the lease: %v", err)
	}
}

// A handler's own settings apply to it alone: its key function makes two
// messages with different idempotency keys one (they share an order id),
// while the other handler on the same topic keys them apart as usual; its
// timeout ends its slow attempt (which the broker then redelivers), while
// the other handler's longer default lets the same slow work finish.
func TestInstallHandlerSettings(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{Lease: time.Minute})
	ps := newPubSub(t, true)
	router := newRouter(t)
	type handler struct{ runs, timedOut atomic.Int32 }
	var orders, audit handler
	// work is slow on a handler's first run of a "slow" message.
	work := func(h *handler) message.NoPublishHandlerFunc {
		return func(msg *message.Message) error {
			if h.runs.Add(1) > 1 && msg.Metadata.Get("slow") != "" || msg.Metadata.Get("slow") == "" {
				return nil
			}
			select {
			case <-msg.Context().Done():
				h.timedOut.Add(1)
				return context.Cause(msg.Context())
			case <-time.After(300 * time.Millisecond):
				return nil
			}
		}
	}
	router.AddConsumerHandler("orders", "in", ps, work(&orders))
	router.AddConsumerHandler("audit", "in", ps, work(&audit))
	err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Timeout: 10 * time.Second,
		Handlers: map[string]HandlerConfig{"orders": {
			Timeout: 50 * time.Millisecond,
			Options: []Option{WithKey(KeyFromMetadata("order_id"))},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)

	slow := keyed("msg-1", "key-1", "p")
	slow.Metadata.Set("order_id", "order-1")
	slow.Metadata.Set("slow", "yes")
	publish(t, ps, "in", slow) // returns once both handlers acked it
	if orders.timedOut.Load() != 1 || orders.runs.Load() != 2 || audit.timedOut.Load() != 0 || audit.runs.Load() != 1 {
		t.Fatalf("orders ran %d times, %d timed out; audit %d, %d timed out; want orders' 50ms to end its first run, audit's 10s none",
			orders.runs.Load(), orders.timedOut.Load(), audit.runs.Load(), audit.timedOut.Load())
	}

	copyOf := keyed("msg-2", "key-2", "p") // another idempotency key, the same order id
	copyOf.Metadata.Set("order_id", "order-1")
	publish(t, ps, "in", copyOf)
	if orders.runs.Load() != 2 || audit.runs.Load() != 2 {
		t.Fatalf("after a second key of the same order: orders ran %d times, audit %d; want 2 (the order was done) and 2 (a new key)",
			orders.runs.Load(), audit.runs.Load())
	}
}

// Install adds its chain when the router runs: on a router already
// running it would never be added, so Install refuses one.
func TestInstallRefusesARunningRouter(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	router := newRouter(t)
	router.AddConsumerHandler("charge", "in", newPubSub(t, false), func(*message.Message) error { return nil })
	run(t, router)
	if err := Install(router, RouterConfig{Receiver: r}); err == nil || !strings.Contains(err.Error(), "before Run") {
		t.Fatalf("Install on a running router = %v, want it refused", err)
	}
}

// A reader of the poison topic gets each poisoned message once, claims
// nothing and poisons nothing again: two malformed messages of one key
// used to loop, the second one's read being a fingerprint mismatch that
// the poison queue parked again, thousands of times a second.
func TestInstallReadsThePoisonTopicOnce(t *testing.T) {
	errMalformed := errors.New("malformed message")
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, false) // the poison queue publishes from inside a delivery
	router := newRouter(t)
	router.AddConsumerHandler("charge", "in", ps, func(*message.Message) error { return errMalformed })
	read := make(chan string, 100)
	router.AddConsumerHandler("poison_reader", "dead", ps, func(msg *message.Message) error {
		read <- msg.UUID
		return nil
	})
	err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps, Topic: "dead"}, Permanent: PermanentErrors(errMalformed)})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)

	reads := 0
	next := func() string {
		t.Helper()
		if reads++; reads > 10 {
			t.Fatalf("the poison reader read %d messages of 3: a loop", reads)
		}
		select {
		case uuid := <-read:
			return uuid
		case <-time.After(receivertest.WaitTimeout):
			t.Fatalf("the poison reader read %d messages, then nothing", reads-1)
			return ""
		}
	}
	publish(t, ps, "in", keyed("msg-1", "payment-1", "garbage"), keyed("msg-2", "payment-1", "other garbage"))
	got := map[string]int{}
	for len(got) < 2 {
		got[next()]++
	}
	publish(t, ps, "dead", keyed("last", "payment-2", "sent straight to the poison topic"))
	for uuid := next(); uuid != "last"; uuid = next() {
		got[uuid]++
	}
	if got["msg-1"] != 1 || got["msg-2"] != 1 {
		t.Errorf("the poison reader read %v before the last message, want msg-1 and msg-2 once each", got)
	}
	if n := rec.Count(receiver.OutcomeProcessed) + rec.Count(receiver.OutcomeDuplicate); n != 0 {
		t.Errorf("%d records made or read (%v), want none: the handler failed, and the reader claims nothing", n, rec.Outcomes())
	}
}
