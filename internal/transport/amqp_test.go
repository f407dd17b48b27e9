package transport

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/internal/testenv"
)

// The transport on its own: fan-out to every handler's queue, work shared
// by the replicas of one handler, redelivery of a nacked message.
func TestAMQPTransport(t *testing.T) {
	url := testenv.AMQP(t)
	prefix, service := testenv.Names()
	cfg := Config{Kind: AMQP, AMQPURL: url, AMQPConnectTimeout: 5 * time.Second, TopicPrefix: prefix, ServiceName: service}
	queue := cfg.AMQPQueue
	testenv.DeleteAMQPOnCleanup(t, url,
		[]string{prefix + "fanout", prefix + "shared", prefix + "nack"},
		[]string{queue("fanout", "a"), queue("fanout", "b"), queue("shared", "r"), queue("nack", "n")})
	tr := newTestTransport(t, cfg)

	t.Run("every handler gets every message", func(t *testing.T) {
		a, b := subscribe(t, tr, "a", "fanout"), subscribe(t, tr, "b", "fanout")
		sent := publishN(t, tr, "fanout", 10)
		for name, ch := range map[string]<-chan *message.Message{"a": a, "b": b} {
			got := receive(t, ch, len(sent))
			for _, m := range got {
				want, ok := sent[m.UUID]
				if !ok || string(m.Payload) != string(want.Payload) || m.Metadata.Get("idempotency_key") != want.Metadata.Get("idempotency_key") {
					t.Errorf("handler %s got %s %q %v, not a message that was sent", name, m.UUID, m.Payload, m.Metadata)
				}
			}
			if len(uuids(got)) != len(sent) {
				t.Errorf("handler %s got %d distinct messages, want %d", name, len(uuids(got)), len(sent))
			}
		}
	})

	t.Run("replicas share a handler's queue", func(t *testing.T) {
		replica1, replica2 := subscribe(t, tr, "r", "shared"), subscribe(t, newTestTransport(t, cfg), "r", "shared")
		waitConsumers(t, url, queue("shared", "r"), 2)
		sent := publishN(t, tr, "shared", 20)

		var mu sync.Mutex
		got := map[int][]*message.Message{}
		for i, ch := range []<-chan *message.Message{replica1, replica2} {
			go func() { // until the subscription ends with the subtest
				for m := range ch {
					m.Ack()
					mu.Lock()
					got[i] = append(got[i], m)
					mu.Unlock()
				}
			}()
		}
		waitFor(t, "every message consumed", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got[0])+len(got[1]) >= len(sent)
		})
		mu.Lock()
		defer mu.Unlock()
		if len(got[0]) == 0 || len(got[1]) == 0 {
			t.Errorf("replicas got %d and %d messages, want the work split between them", len(got[0]), len(got[1]))
		}
		if all := uuids(append(got[0], got[1]...)); len(all) != len(sent) || len(got[0])+len(got[1]) != len(sent) {
			t.Errorf("replicas got %d messages, %d distinct, want each of the %d once", len(got[0])+len(got[1]), len(all), len(sent))
		}
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) {
		ch := subscribe(t, tr, "n", "nack")
		sent := publishN(t, tr, "nack", 1)
		first := receive(t, ch, 1, (*message.Message).Nack)[0]
		again := receive(t, ch, 1)[0]
		if _, ok := sent[first.UUID]; !ok || again.UUID != first.UUID {
			t.Fatalf("got %s then %s, want the sent message twice", first.UUID, again.UUID)
		}
		if !amqp.IsMessageRedelivered(again) {
			t.Error("the second delivery is not marked as redelivered")
		}
	})

	t.Run("close ends every subscription and the publisher", func(t *testing.T) {
		tr, err := New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		subs := []<-chan *message.Message{subscribe(t, tr, "a", "fanout"), subscribe(t, tr, "b", "fanout")}
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
		if err := tr.Publisher().Publish("fanout", message.NewMessage(watermill.NewUUID(), nil)); err == nil {
			t.Error("publishing after close succeeded")
		}
	})
}

// subscribe subscribes handler's subscriber of tr to topic until the test
// ends.
func subscribe(t *testing.T, tr *Transport, handler, topic string) <-chan *message.Message {
	t.Helper()
	s, err := tr.Subscriber(handler)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// publishN publishes n messages with JSON payloads and idempotency keys, and
// returns them by UUID.
func publishN(t *testing.T, tr *Transport, topic string, n int) map[string]*message.Message {
	t.Helper()
	sent := make(map[string]*message.Message, n)
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, `{"n":%d}`, i))
		m.Metadata.Set("idempotency_key", fmt.Sprintf("key-%d", i))
		sent[m.UUID] = m
		msgs = append(msgs, m)
	}
	if err := tr.Publisher().Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// receive takes n messages from ch, settling each with settle (Ack unless
// given), and fails the test if they do not come within 10 seconds.
func receive(t *testing.T, ch <-chan *message.Message, n int, settle ...func(*message.Message) bool) []*message.Message {
	t.Helper()
	done := (*message.Message).Ack
	if len(settle) > 0 {
		done = settle[0]
	}
	timeout := time.After(10 * time.Second)
	var got []*message.Message
	for len(got) < n {
		select {
		case m := <-ch:
			done(m)
			got = append(got, m)
		case <-timeout:
			t.Fatalf("received %d of %d messages in 10s", len(got), n)
		}
	}
	return got
}

func uuids(msgs []*message.Message) map[string]bool {
	set := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		set[m.UUID] = true
	}
	return set
}

// waitConsumers waits until queue has n consumers, so that messages
// published next are spread over all of them.
func waitConsumers(t *testing.T, url, queue string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d consumers on %s", n, queue), func() bool {
		var q amqp091.Queue
		testenv.AMQPChannel(t, url, func(ch *amqp091.Channel) (err error) {
			q, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			return err
		})
		return q.Consumers >= n
	})
}
