package signing_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/signing"
)

// Publisher and Middleware sign and verify the topic as it is on the
// broker, the prefix its transport prepends included, while the router
// and the publisher's callers name topics without it. Staging and prod
// share a broker and, wrongly, a secret: a message staging signed, copied
// from staging's topic to prod's, is refused in prod; prod's own passes.
func TestSignerBindsTheBrokerTopic(t *testing.T) {
	ps := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	staging := newSignerOf(t, signing.Config{Secrets: [][]byte{newSecret}, TopicPrefix: "srvstg."})
	prod := newSignerOf(t, signing.Config{Secrets: [][]byte{newSecret}, TopicPrefix: "srvprd."})

	publish := func(pub message.Publisher, msg *message.Message) {
		t.Helper()
		if err := pub.Publish("payments", msg); err != nil {
			t.Fatal(err)
		}
	}
	publish(staging.Publisher(prefixedPublisher{ps, "srvstg."}), keyed("captured", "payment-1", "to the attacker"))
	publish(prod.Publisher(prefixedPublisher{ps, "srvprd."}), keyed("own", "payment-2", "to the merchant"))
	stagingTopic, err := ps.Subscribe(t.Context(), "srvstg.payments")
	if err != nil {
		t.Fatal(err)
	}
	captured := <-stagingTopic
	captured.Ack()
	if err := ps.Publish("srvprd.payments", captured.Copy()); err != nil { // verbatim, on prod's topic
		t.Fatal(err)
	}

	outcomes := make(chan string, 2)
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	router.AddMiddleware(func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			if _, err := h(msg); err != nil {
				outcomes <- fmt.Sprintf("%s refused: %v", msg.UUID, err)
			}
			return nil, nil // acked either way: the test reads each message once
		}
	}, prod.Middleware)
	router.AddConsumerHandler("charge", "payments", prefixedSubscriber{ps, "srvprd."}, func(msg *message.Message) error {
		outcomes <- msg.UUID + " handled"
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = router.Run(ctx) }()
	defer router.Close()

	var got []string
	for range 2 {
		select {
		case o := <-outcomes:
			got = append(got, o)
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes %q, want two", got)
		}
	}
	slices.Sort(got)
	want := `captured refused: message captured on topic "srvprd.payments": bad_signature`
	if got[1] != "own handled" || !strings.HasPrefix(got[0], want) {
		t.Fatalf("outcomes %q, want staging's copy refused on prod's broker topic and prod's own handled", got)
	}
}

// prefixedPublisher publishes to prefix + topic, as a transport with a
// topic prefix does.
type prefixedPublisher struct {
	message.Publisher
	prefix string
}

func (p prefixedPublisher) Publish(topic string, msgs ...*message.Message) error {
	return p.Publisher.Publish(p.prefix+topic, msgs...)
}

// prefixedSubscriber subscribes to prefix + topic, as a transport with a
// topic prefix does.
type prefixedSubscriber struct {
	message.Subscriber
	prefix string
}

func (s prefixedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return s.Subscriber.Subscribe(ctx, s.prefix+topic)
}
