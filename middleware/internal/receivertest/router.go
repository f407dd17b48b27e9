package receivertest

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// PubSub returns an in-process pub/sub, closed when the test ends. With
// blocking set, Publish returns only once every subscriber acked the
// message: after the router processed it, redeliveries included. That is
// the tests' signal that a message is done.
func PubSub(t testing.TB, blocking bool) *gochannel.GoChannel {
	t.Helper()
	ps := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: blocking}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// Router returns a router that does not log.
func Router(t testing.TB) *message.Router {
	t.Helper()
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// Run starts router and returns once its handlers are subscribed; the
// router is closed, and must have run without error, when the test ends.
func Run(t testing.TB, router *message.Router) {
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

// Publish publishes msgs to topic on pub, failing the test on an error.
func Publish(t testing.TB, pub message.Publisher, topic string, msgs ...*message.Message) {
	t.Helper()
	if err := pub.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
}

// Keyed returns a message with an idempotency key in its metadata, under
// the Watermill face's default key (consume.MetadataKey).
func Keyed(uuid, key, payload string) *message.Message {
	msg := message.NewMessage(uuid, []byte(payload))
	msg.Metadata.Set("idempotency_key", key)
	return msg
}
