package transport

import (
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// The checks below are what every broker transport promises, whatever the
// broker; each transport's test runs them on its own topics.

// checkReplicasShare acks what each replica's subscription delivers until
// together they got every message of sent, then requires that each got
// some and that each message came once. work, when positive, is how long
// a delivery takes, so that one replica cannot take everything.
func checkReplicasShare(t *testing.T, replicas []<-chan *message.Message, sent map[string]*message.Message, work time.Duration) {
	t.Helper()
	var mu sync.Mutex
	got := make([][]*message.Message, len(replicas))
	for i, ch := range replicas {
		go func() { // until the subscription ends with the test
			for m := range ch {
				time.Sleep(work)
				m.Ack()
				mu.Lock()
				got[i] = append(got[i], m)
				mu.Unlock()
			}
		}()
	}
	total := func() int {
		n := 0
		for _, g := range got {
			n += len(g)
		}
		return n
	}
	waitFor(t, "every message consumed by the replicas", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total() >= len(sent)
	})
	time.Sleep(200 * time.Millisecond) // a message delivered twice would show now
	mu.Lock()
	defer mu.Unlock()
	var all []*message.Message
	for i, g := range got {
		if len(g) == 0 {
			t.Errorf("replica %d got no message, want the work split between the replicas", i+1)
		}
		all = append(all, g...)
	}
	if distinct := uuids(all); len(distinct) != len(sent) || len(all) != len(sent) {
		t.Errorf("replicas got %d messages, %d distinct, want each of the %d once", len(all), len(distinct), len(sent))
	}
}

// checkNackRedelivered nacks a message published to topic and requires it
// back on the same subscription; it returns the second delivery.
func checkNackRedelivered(t *testing.T, tr *Transport, topic string) *message.Message {
	t.Helper()
	ch := subscribe(t, tr, "n", topic)
	sent := publishN(t, tr, topic, 1)
	first := receive(t, ch, 1, (*message.Message).Nack)[0]
	again := receive(t, ch, 1)[0]
	if _, ok := sent[first.UUID]; !ok || again.UUID != first.UUID {
		t.Fatalf("got %s then %s, want the sent message twice", first.UUID, again.UUID)
	}
	return again
}

// checkEarlyDelivered publishes to topic before any handler subscribed to
// it and requires every message on the first subscription.
func checkEarlyDelivered(t *testing.T, tr *Transport, topic string) {
	t.Helper()
	sent := publishN(t, tr, topic, 3)
	got := uuids(receive(t, subscribe(t, tr, "late", topic), len(sent)))
	for id := range sent {
		if !got[id] {
			t.Errorf("message %s published before the subscription was not delivered", id)
		}
	}
}

// checkCloseEnds opens a transport of cfg, subscribes two handlers to
// topic, closes it, and requires both subscriptions to end within 5 s,
// Publish to fail, and a second Close to be harmless.
func checkCloseEnds(t *testing.T, cfg Config, topic string) {
	t.Helper()
	tr, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	subs := []<-chan *message.Message{subscribe(t, tr, "a", topic), subscribe(t, tr, "b", topic)}
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for i, ch := range subs {
		select {
		case _, open := <-ch:
			if open {
				t.Errorf("subscription %d delivered after close", i+1)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("subscription %d still open 5s after close", i+1)
		}
	}
	if err := tr.Publisher().Publish(topic, message.NewMessage(watermill.NewUUID(), nil)); err == nil {
		t.Error("publishing after close succeeded")
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}
