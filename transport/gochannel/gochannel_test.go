package gochannel

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The in-process transport: every handler gets every message once, a
// handler holds its in-flight count, and Publish answers for each message:
// nil once every handler acked it, an error when a handler's subscriber
// closed first.
func TestGoChannelTransport(t *testing.T) {
	t.Run("every handler gets every message once", func(t *testing.T) {
		tr := newTestTransport(t, Config{})
		a, b := transporttest.SubscribeN(t, tr, "a", "fanout", 4), transporttest.SubscribeN(t, tr, "b", "fanout", 4)
		sent, done := transporttest.PublishEach(t, tr, "fanout", 10)
		for name, ch := range map[string]<-chan *message.Message{"a": a, "b": b} {
			got := transporttest.Receive(t, ch, len(sent))
			if ids := transporttest.UUIDs(got); !maps.EqualFunc(ids, sent, func(bool, *message.Message) bool { return true }) {
				t.Errorf("handler %s got %d messages, %d distinct, want each of the %d sent once", name, len(got), len(ids), len(sent))
			}
		}
		for id, err := range transporttest.Outcomes(t, done, len(sent)) {
			if err != nil {
				t.Errorf("publishing %s: %v", id, err)
			}
		}
	})

	t.Run("a handler holds its in-flight count at once", func(t *testing.T) {
		transporttest.CheckInFlight(t, newTestTransport(t, Config{}), "lanes", 8, 9)
	})

	t.Run("a closed subscriber fails the Publish of what it held", func(t *testing.T) {
		tr := newTestTransport(t, Config{})
		sub, err := tr.Subscriber("h", 8)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := sub.Subscribe(t.Context(), "handback")
		if err != nil {
			t.Fatal(err)
		}
		_, done := transporttest.PublishEach(t, tr, "handback", 16)
		acked := transporttest.Receive(t, ch, 8)
		held := transporttest.Receive(t, ch, 8, transporttest.Hold)
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
		transporttest.NackUntilClosed(t, ch)
		got := transporttest.Outcomes(t, done, 16)
		for _, m := range acked {
			if err := got[m.UUID]; err != nil {
				t.Errorf("publishing %s, acked: %v", m.UUID, err)
			}
		}
		for _, m := range held {
			if got[m.UUID] == nil {
				t.Errorf("publishing %s, held when its subscriber closed: no error", m.UUID)
			}
		}
		if err := tr.Publisher().Publish("handback", message.NewMessage(watermill.NewUUID(), nil)); err == nil {
			t.Error("publishing after a subscriber closed the pub/sub succeeded")
		}
	})

	t.Run("a message nobody subscribes to is dropped", func(t *testing.T) {
		tr := newTestTransport(t, Config{})
		if err := tr.Publisher().Publish("nobody", message.NewMessage(watermill.NewUUID(), nil)); err != nil {
			t.Errorf("publishing to a topic with no subscription: %v", err)
		}
	})

	t.Run("a subscription ends with its context", func(t *testing.T) {
		tr := newTestTransport(t, Config{})
		sub, err := tr.Subscriber("h", 2)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := sub.Subscribe(ctx, "ending")
		if err != nil {
			t.Fatal(err)
		}
		_, done := transporttest.PublishEach(t, tr, "ending", 1)
		m := transporttest.Receive(t, ch, 1, transporttest.Hold)[0]
		cancel()
		transporttest.NackUntilClosed(t, ch)
		if err := transporttest.Outcomes(t, done, 1)[m.UUID]; err == nil {
			t.Error("the Publish of a message held when its subscription ended succeeded")
		}
		if err := tr.Publisher().Publish("ending", message.NewMessage(watermill.NewUUID(), nil)); err != nil {
			t.Errorf("publishing after a subscription ended, the pub/sub open: %v", err)
		}
	})

	t.Run("a message's context bounds its Publish", func(t *testing.T) {
		tr := newTestTransport(t, Config{})
		sub, err := tr.Subscriber("h", 1)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := sub.Subscribe(t.Context(), "failing")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		msg := message.NewMessage(watermill.NewUUID(), nil)
		msg.SetContext(ctx) // an API request's
		published := make(chan error, 1)
		go func() { published <- tr.Publisher().Publish("failing", msg) }()
		for range 3 { // a handler that keeps failing
			m := transporttest.Receive(t, ch, 1, transporttest.Hold)[0]
			m.Nack()
		}
		cancel() // the request's deadline
		select {
		case err := <-published:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Publish = %v, want the message's context's error", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Publish still waiting 10s after its message's context ended")
		}
	})

	t.Run("close ends every subscription and the publisher", func(t *testing.T) { transporttest.CheckCloseEnds(t, opener(Config{}), "fanout") })
}

// opener opens New(cfg).
func opener(cfg Config) transporttest.Opener {
	return func(context.Context) (*broker.Transport, error) { return New(cfg), nil }
}

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *broker.Transport {
	t.Helper()
	return transporttest.OpenWith(t, opener(cfg))
}
