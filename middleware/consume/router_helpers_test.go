package consume

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
)

// The router helpers of the receiver's tests (receivertest): newPubSub's
// blocking Publish returns once every subscriber acked the message, the
// tests' signal that a message is done.
var (
	newPubSub = receivertest.PubSub
	newRouter = receivertest.Router
	run       = receivertest.Run
	publish   = receivertest.Publish
	keyed     = receivertest.Keyed // metadata MetadataKey
)

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
