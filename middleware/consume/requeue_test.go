package consume

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/components/requeuer"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// A handler that requeues gets a failed message back through the broker,
// its record released in between, until it succeeds — once; a message
// that keeps failing is poisoned after Max requeues, with its class; a
// handler without a policy is left to the broker; and what is published
// straight to the requeue topic for a topic no handler reads is poisoned.
func TestRequeue(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, false)
	poisoned := collect(t, ps, "dead")
	router := newRouter(t)
	var (
		mu       sync.Mutex
		attempts = map[string]int{}
		done     = make(chan string, 10)
	)
	router.AddConsumerHandler("charge", "in", ps, func(msg *message.Message) error {
		mu.Lock()
		attempts[msg.UUID]++
		n := attempts[msg.UUID]
		mu.Unlock()
		if msg.UUID == "flaky" && n <= 2 || msg.UUID == "down" {
			return errors.New("the provider answered 503")
		}
		done <- msg.UUID
		return nil
	})
	err := Install(router, RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps, Topic: "dead"},
		Requeue:  &Requeue{Publisher: ps, Subscriber: ps, Topics: []string{"in"}},
		Handlers: map[string]HandlerConfig{"charge": {Requeue: &RequeuePolicy{Delay: time.Millisecond, Max: 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, router)

	publish(t, ps, "in", keyed("flaky", "payment-1", "amount=1"))
	select {
	case got := <-done:
		if got != "flaky" {
			t.Fatalf("done %s", got)
		}
	case <-time.After(receivertest.WaitTimeout):
		t.Fatal("the flaky message never succeeded")
	}
	publish(t, ps, "in", keyed("down", "payment-2", "amount=2"))
	got := receive(t, poisoned, 1)[0]
	if got.UUID != "down" || got.Metadata.Get(PoisonClassKey) != ClassRetriesExhausted || got.Metadata.Get(requeuer.RetriesKey) != "3" {
		t.Errorf("poisoned %s with %v, want down after 3 requeues, retries_exhausted", got.UUID, got.Metadata)
	}
	mu.Lock()
	if attempts["flaky"] != 3 || attempts["down"] != 4 {
		t.Errorf("attempts %v, want flaky 3 times and down 4 (the first and 3 requeues)", attempts)
	}
	mu.Unlock()
	if p, f := rec.Count(receiver.OutcomeProcessed), rec.Count(receiver.OutcomeFailed); p != 1 || f != 6 {
		t.Errorf("%d processed and %d failed, want flaky processed once after 2 failures and down's 4 failures: each a fresh claim", p, f)
	}

	stray := keyed("stray", "payment-3", "amount=3")
	stray.Metadata.Set(RequeueTopicKey, "elsewhere")
	publish(t, ps, DefaultRequeueTopic, stray)
	got = receive(t, poisoned, 1)[0]
	if got.UUID != "stray" || got.Metadata.Get(middleware.PoisonedTopicKey) != "elsewhere" {
		t.Errorf("the stray requeue went to %s with %v, want the poison topic", got.UUID, got.Metadata)
	}
}

// Install refuses a policy without the router's Requeue, and Requeue
// without a poison queue to end in.
func TestRequeueRefusesAnIncompleteConfig(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ps := newPubSub(t, false)
	for name, cfg := range map[string]RouterConfig{
		"policy without Requeue": {Receiver: r, Handlers: map[string]HandlerConfig{"charge": {Requeue: &RequeuePolicy{Delay: time.Second, Max: 1}}}},
		"Requeue without Poison": {Receiver: r, Requeue: &Requeue{Publisher: ps, Subscriber: ps, Topics: []string{"in"}}},
		"a policy of no delay": {Receiver: r, Poison: &Poison{Publisher: ps}, Requeue: &Requeue{Publisher: ps, Subscriber: ps, Topics: []string{"in"}},
			Handlers: map[string]HandlerConfig{"charge": {Requeue: &RequeuePolicy{Max: 1}}}},
	} {
		if err := Install(newRouter(t), cfg); err == nil {
			t.Errorf("%s: Install accepted it", name)
		}
	}
}
