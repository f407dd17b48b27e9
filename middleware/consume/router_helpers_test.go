package consume

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
)

// newPubSub returns an in-process pub/sub. With blocking set, Publish
// returns only once every subscriber acked the message: after the router
// processed it, redeliveries included. That is the tests' signal that a
// message is done.
func newPubSub(t *testing.T, blocking bool) *gochannel.GoChannel {
	t.Helper()
	ps := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: blocking}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

func newRouter(t *testing.T) *message.Router {
	t.Helper()
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// run starts router and returns once its handlers are subscribed.
func run(t *testing.T, router *message.Router) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- router.Run(context.Background()) }()
	select {
	case <-router.Running():
	case err := <-done:
		t.Fatalf("router stopped at start: %v", err)
	}
	t.Cleanup(func() {
		if err := router.Close(); err != nil {
			t.Errorf("closing router: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("router: %v", err)
		}
	})
}

// collect subscribes to topic and hands every message over, then acks it:
// a blocking publisher returns only once the message is in the channel.
func collect(t *testing.T, sub message.Subscriber, topic string) <-chan *message.Message {
	t.Helper()
	in, err := sub.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan *message.Message, 100)
	go func() {
		for msg := range in {
			out <- msg
			msg.Ack()
		}
	}()
	return out
}

// receive takes n messages from ch.
func receive(t *testing.T, ch <-chan *message.Message, n int) []*message.Message {
	t.Helper()
	msgs := make([]*message.Message, 0, n)
	timeout := time.After(receivertest.WaitTimeout)
	for len(msgs) < n {
		select {
		case m := <-ch:
			msgs = append(msgs, m)
		case <-timeout:
			t.Fatalf("received %d of %d messages", len(msgs), n)
		}
	}
	return msgs
}

func publish(t *testing.T, pub message.Publisher, topic string, msgs ...*message.Message) {
	t.Helper()
	if err := pub.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
}

// keyed returns a message with an idempotency key in its metadata.
func keyed(uuid, key, payload string) *message.Message {
	msg := message.NewMessage(uuid, []byte(payload))
	msg.Metadata.Set(MetadataKey, key)
	return msg
}

// failingPublisher fails its first failures Publish calls, like a broker
// that went away right after the handler's record was completed.
type failingPublisher struct {
	message.Publisher
	failures atomic.Int32
	calls    atomic.Int32
}

func (p *failingPublisher) Publish(topic string, msgs ...*message.Message) error {
	if p.calls.Add(1) <= p.failures.Load() {
		return errPublish
	}
	return p.Publisher.Publish(topic, msgs...)
}
