package broker

import (
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
)

// topicRecorder is a subscriber that records the topics it is given.
type topicRecorder struct{ subscribed []string }

func (r *topicRecorder) Subscribe(_ context.Context, topic string) (<-chan *message.Message, error) {
	r.subscribed = append(r.subscribed, topic)
	return nil, nil
}

func (*topicRecorder) Close() error { return nil }

// initializingRecorder is a topicRecorder that initializes topics too.
type initializingRecorder struct {
	topicRecorder
	initialized []string
}

func (r *initializingRecorder) SubscribeInitialize(topic string) error {
	r.initialized = append(r.initialized, topic)
	return nil
}

// With a topic prefix a subscriber subscribes to, and initializes, the
// prefixed topic, and is a [message.SubscribeInitializer] exactly when the
// transport's own subscriber is one: a caller that initializes topics
// before publishing to them (Watermill's Pub/Sub suite does) reaches the
// broker's.
func TestTopicPrefixSubscriber(t *testing.T) {
	const prefix = "env."
	subscriberOf := func(s message.Subscriber) message.Subscriber {
		t.Helper()
		tr := New(Parts{Subscriber: func(string, int) (message.Subscriber, error) { return s, nil }}, prefix)
		got, err := tr.Subscriber("h", 1)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	t.Run("initializing", func(t *testing.T) {
		inner := &initializingRecorder{}
		s := subscriberOf(inner)
		init, ok := s.(message.SubscribeInitializer)
		if !ok {
			t.Fatal("the prefixed subscriber hides SubscribeInitialize")
		}
		if err := init.SubscribeInitialize("orders"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Subscribe(t.Context(), "orders"); err != nil {
			t.Fatal(err)
		}
		if len(inner.initialized) != 1 || inner.initialized[0] != prefix+"orders" {
			t.Errorf("initialized %v, want [%sorders]", inner.initialized, prefix)
		}
		if len(inner.subscribed) != 1 || inner.subscribed[0] != prefix+"orders" {
			t.Errorf("subscribed to %v, want [%sorders]", inner.subscribed, prefix)
		}
	})

	t.Run("not initializing", func(t *testing.T) {
		inner := &topicRecorder{}
		s := subscriberOf(inner)
		if _, ok := s.(message.SubscribeInitializer); ok {
			t.Error("the prefixed subscriber claims a SubscribeInitialize its transport's has not")
		}
		if _, err := s.Subscribe(t.Context(), "orders"); err != nil {
			t.Fatal(err)
		}
		if len(inner.subscribed) != 1 || inner.subscribed[0] != prefix+"orders" {
			t.Errorf("subscribed to %v, want [%sorders]", inner.subscribed, prefix)
		}
	})
}
