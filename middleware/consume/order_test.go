package consume

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/requeuer"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// provider is a payment provider that honours effect keys: a charge sent
// again with the same key is answered, not made again.
type provider struct {
	mu      sync.Mutex
	charged map[string]string   // effect key -> payment
	keys    map[string][]string // payment -> the effect keys it was charged under
	done    chan string         // a payment, on its first charge
}

func newProvider() *provider {
	return &provider{charged: map[string]string{}, keys: map[string][]string{}, done: make(chan string, 100)}
}

func (p *provider) charge(effectKey, payment string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.charged[effectKey]; ok {
		return
	}
	p.charged[effectKey] = payment
	p.keys[payment] = append(p.keys[payment], effectKey)
	p.done <- payment
}

// chargeOnce is the handler of the order test: payment "fails-before"
// fails its first attempt before it charges, "fails-after" once it has
// charged, "succeeds" never.
func chargeOnce(p *provider) message.NoPublishHandlerFunc {
	var mu sync.Mutex
	attempts := map[string]int{}
	return func(msg *message.Message) error {
		payment := string(msg.Payload)
		mu.Lock()
		attempts[payment]++
		first := attempts[payment] == 1
		mu.Unlock()
		if first && payment == "fails-before" {
			return errors.New("provider unreachable")
		}
		key, ok := receiver.EffectKey(msg.Context(), "")
		if !ok {
			return errors.New("no effect key")
		}
		p.charge(key, payment)
		if first && payment == "fails-after" {
			return errors.New("connection lost after the charge")
		}
		return nil
	}
}

// A stack is what a Watermill service already has on its router.
type stack struct {
	name string
	// middlewares returns the stack; a requeuer it starts reads "requeue"
	// and publishes back to "payments".
	middlewares func(t *testing.T, ps *gochannel.GoChannel) []message.HandlerMiddleware
}

// withRequeuer runs a requeuer on a router of its own, as Watermill's
// delayed-requeue example does.
func withRequeuer(t *testing.T, ps *gochannel.GoChannel) {
	t.Helper()
	router := newRouter(t)
	_, err := requeuer.NewRequeuer(requeuer.Config{
		Router:         router,
		Subscriber:     ps,
		SubscribeTopic: "requeue",
		Publisher:      ps,
		GeneratePublishTopic: func(p requeuer.GeneratePublishTopicParams) (string, error) {
			return p.Message.Metadata.Get(middleware.PoisonedTopicKey), nil
		},
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)
}

var stacks = []stack{
	{"Retry", func(*testing.T, *gochannel.GoChannel) []message.HandlerMiddleware {
		return []message.HandlerMiddleware{middleware.Retry{MaxRetries: 3, InitialInterval: time.Millisecond}.Middleware}
	}},
	{"Timeout", func(*testing.T, *gochannel.GoChannel) []message.HandlerMiddleware {
		return []message.HandlerMiddleware{middleware.Timeout(5 * time.Second)}
	}},
	{"PoisonQueue to a requeuer", func(t *testing.T, ps *gochannel.GoChannel) []message.HandlerMiddleware {
		poison, err := middleware.PoisonQueue(ps, "requeue")
		if err != nil {
			t.Fatal(err)
		}
		withRequeuer(t, ps)
		return []message.HandlerMiddleware{poison}
	}},
	{"DelayOnError, PoisonQueue to a requeuer", func(t *testing.T, ps *gochannel.GoChannel) []message.HandlerMiddleware {
		poison, err := middleware.PoisonQueue(ps, "requeue")
		if err != nil {
			t.Fatal(err)
		}
		withRequeuer(t, ps)
		delay := &middleware.DelayOnError{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Multiplier: 2}
		return []message.HandlerMiddleware{poison, delay.Middleware}
	}},
	{"all of them", func(t *testing.T, ps *gochannel.GoChannel) []message.HandlerMiddleware {
		poison, err := middleware.PoisonQueue(ps, "requeue")
		if err != nil {
			t.Fatal(err)
		}
		withRequeuer(t, ps)
		delay := &middleware.DelayOnError{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Multiplier: 2}
		return []message.HandlerMiddleware{
			middleware.Recoverer, poison, delay.Middleware,
			middleware.Retry{MaxRetries: 1, InitialInterval: time.Millisecond}.Middleware,
			middleware.Timeout(5 * time.Second),
		}
	}},
}

// Whatever a service has on its router, and wherever it adds it — before
// Install, after it, or to the handler — the receiver stays innermost: a
// payment whose first attempt fails before its charge is charged once it
// is redelivered or requeued, one that fails after its charge is not
// charged again (its effect key is the same), and a copy of each is a
// duplicate.
func TestInstallStaysInnermost(t *testing.T) {
	placements := []struct {
		name string
		add  func(router *message.Router, h *message.Handler, mws []message.HandlerMiddleware, install func())
	}{
		{"before Install", func(router *message.Router, _ *message.Handler, mws []message.HandlerMiddleware, install func()) {
			router.AddMiddleware(mws...)
			install()
		}},
		{"after Install", func(router *message.Router, _ *message.Handler, mws []message.HandlerMiddleware, install func()) {
			install()
			router.AddMiddleware(mws...)
		}},
		{"to the handler after Install", func(_ *message.Router, h *message.Handler, mws []message.HandlerMiddleware, install func()) {
			install()
			h.AddMiddleware(mws...)
		}},
	}
	payments := []string{"fails-before", "fails-after", "succeeds"}
	for _, s := range stacks {
		for _, p := range placements {
			t.Run(s.name+"/"+p.name, func(t *testing.T) {
				r, rec := receivertest.NewReceiver(t, receiver.Config{})
				ps := newPubSub(t, false) // a requeuer publishes from inside a delivery
				prov := newProvider()
				router := newRouter(t)
				h := router.AddConsumerHandler("charge", "payments", ps, chargeOnce(prov))
				p.add(router, h, s.middlewares(t, ps), func() {
					if err := Install(router, RouterConfig{Receiver: r}); err != nil {
						t.Fatal(err)
					}
				})
				run(t, router)

				for _, pay := range payments {
					publish(t, ps, "payments", keyed(watermill.NewUUID(), pay, pay))
				}
				charged := map[string]bool{}
				for range payments {
					select {
					case pay := <-prov.done:
						charged[pay] = true
					case <-time.After(receivertest.WaitTimeout):
						t.Fatalf("charged %v of %v: a failed attempt was completed and its payment lost (outcomes %v)",
							charged, payments, rec.Outcomes())
					}
				}
				rec.Await(t, "three processed", func() bool { return rec.Count(receiver.OutcomeProcessed) == len(payments) })
				for _, pay := range payments { // a copy of each, with a new UUID
					publish(t, ps, "payments", keyed(watermill.NewUUID(), pay, pay))
				}
				rec.Await(t, "three duplicates", func() bool { return rec.Count(receiver.OutcomeDuplicate) == len(payments) })

				prov.mu.Lock()
				defer prov.mu.Unlock()
				for _, pay := range payments {
					want := receivertest.EffectKey(t, "charge", pay, "")
					if keys := prov.keys[pay]; len(keys) != 1 || keys[0] != want {
						t.Errorf("%s charged under %q, want once, under %q", pay, keys, want)
					}
				}
			})
		}
	}
}

// A middleware that joins a handler's chain inside the receiver once the
// router runs is refused when the handler starts, by name.
func TestInstallRefusesAMiddlewareInsideTheReceiver(t *testing.T) {
	router := newRouter(t)
	handler := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	router.AddHandler("charge", "payments", newPubSub(t, false), "out", newPubSub(t, false), handler)
	in := newInnermost(router)
	in.know(router.Handlers())

	if got := in.check(router.Handlers()["charge"]); got == nil {
		t.Fatal("the handler's own function was refused")
	}
	inside := middleware.Retry{MaxRetries: 1}.Middleware(router.Handlers()["charge"])
	defer func() {
		err, _ := recover().(error)
		if err == nil || !strings.Contains(err.Error(), "Retry.Middleware") {
			t.Fatalf("check panicked with %v, want an error naming Retry's middleware", err)
		}
	}()
	in.check(inside)
}
