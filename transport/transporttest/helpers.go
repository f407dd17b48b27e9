package transporttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/broker"
)

// The service's topics, and the metadata entry holding a message's
// idempotency key (the receiver's, TestKeyMetadataIsTheReceivers checks),
// as the tests use them.
const (
	TopicRequested = "orders.placed"
	TopicCharged   = "orders.paid"
	TopicPoison    = "poison"
	KeyMetadata    = "idempotency_key"
)

// Opener opens a transport: one instance of the service's, a replica.
type Opener func(context.Context) (*broker.Transport, error)

// OpenerOf is the Opener of a broker package's constructor newTransport
// with cfg.
func OpenerOf[C any](newTransport func(context.Context, C) (*broker.Transport, error), cfg C) Opener {
	return func(ctx context.Context) (*broker.Transport, error) { return newTransport(ctx, cfg) }
}

// WaitFor polls cond until it holds, failing the test after 20 seconds.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, cond)
}

// Open is newTransport(cfg) of a broker package, failing the test if it
// fails, closed when the test ends.
func Open[C any](t *testing.T, newTransport func(context.Context, C) (*broker.Transport, error), cfg C) *broker.Transport {
	t.Helper()
	return OpenWith(t, OpenerOf(newTransport, cfg))
}

// OpenWith is Open for a transport that open opens.
func OpenWith(t *testing.T, open Opener) *broker.Transport {
	t.Helper()
	tr, err := open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("closing transport: %v", err)
		}
	})
	return tr
}

// Subscribe subscribes handler's subscriber of tr, one message in flight,
// to topic until the test ends.
func Subscribe(t *testing.T, tr *broker.Transport, handler, topic string) <-chan *message.Message {
	t.Helper()
	return SubscribeN(t, tr, handler, topic, 1)
}

// SubscribeN subscribes handler's subscriber of tr, inFlight messages in
// flight, to topic until the test ends.
func SubscribeN(t *testing.T, tr *broker.Transport, handler, topic string, inFlight int) <-chan *message.Message {
	t.Helper()
	s, err := tr.Subscriber(handler, inFlight)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// PublishN publishes n messages with JSON payloads and idempotency keys of
// their own (a key published again would be dropped on NATS within its
// duplicate window), and returns them by UUID.
func PublishN(t *testing.T, tr *broker.Transport, topic string, n int) map[string]*message.Message {
	t.Helper()
	sent := make(map[string]*message.Message, n)
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, `{"n":%d}`, i))
		m.Metadata.Set(KeyMetadata, "key-"+m.UUID)
		sent[m.UUID] = m
		msgs = append(msgs, m)
	}
	if err := tr.Publisher().Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// Receive takes n messages from ch, settling each with settle (Ack unless
// given), and fails the test if they do not come within 10 seconds.
func Receive(t *testing.T, ch <-chan *message.Message, n int, settle ...func(*message.Message) bool) []*message.Message {
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

// UUIDs is the set of the messages' UUIDs.
func UUIDs(msgs []*message.Message) map[string]bool {
	set := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		set[m.UUID] = true
	}
	return set
}
