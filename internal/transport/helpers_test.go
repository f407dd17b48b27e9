package transport

import (
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	idem "github.com/onceflow/onceflow/middleware/consume"
)

// The service's topics and key metadata, as the tests use them.
const (
	topicRequested = "payments.requested"
	topicCharged   = "payments.charged"
	topicPoison    = "poison"
	keyMetadata    = idem.MetadataKey
)

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, cond)
}

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *Transport {
	t.Helper()
	tr, err := New(t.Context(), cfg)
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

// subscribe subscribes handler's subscriber of tr, one message in flight,
// to topic until the test ends.
func subscribe(t *testing.T, tr *Transport, handler, topic string) <-chan *message.Message {
	t.Helper()
	return subscribeN(t, tr, handler, topic, 1)
}

// subscribeN subscribes handler's subscriber of tr, inFlight messages in
// flight, to topic until the test ends.
func subscribeN(t *testing.T, tr *Transport, handler, topic string, inFlight int) <-chan *message.Message {
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

// publishN publishes n messages with JSON payloads and idempotency keys of
// their own (a key published again would be dropped on NATS within its
// duplicate window), and returns them by UUID.
func publishN(t *testing.T, tr *Transport, topic string, n int) map[string]*message.Message {
	t.Helper()
	sent := make(map[string]*message.Message, n)
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, `{"n":%d}`, i))
		m.Metadata.Set(keyMetadata, "key-"+m.UUID)
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
