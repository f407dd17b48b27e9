package transporttest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/transport/broker"
)

// The checks below are what every broker transport promises, whatever the
// broker; each transport's test runs them on its own topics.

// CheckReplicasShare acks what each replica's subscription delivers until
// together they got every message of sent, then requires that each got
// some and that each message came once. work, when positive, is how long
// a delivery takes, so that one replica cannot take everything.
func CheckReplicasShare(t *testing.T, replicas []<-chan *message.Message, sent map[string]*message.Message, work time.Duration) {
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
	WaitFor(t, "every message consumed by the replicas", func() bool {
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
	if distinct := UUIDs(all); len(distinct) != len(sent) || len(all) != len(sent) {
		t.Errorf("replicas got %d messages, %d distinct, want each of the %d once", len(all), len(distinct), len(sent))
	}
}

// CheckNackRedelivered nacks a message published to topic and requires it
// back on the same subscription; it returns the second delivery.
func CheckNackRedelivered(t *testing.T, tr *broker.Transport, topic string) *message.Message {
	t.Helper()
	ch := Subscribe(t, tr, "n", topic)
	sent := PublishN(t, tr, topic, 1)
	first := Receive(t, ch, 1, (*message.Message).Nack)[0]
	again := Receive(t, ch, 1)[0]
	if _, ok := sent[first.UUID]; !ok || again.UUID != first.UUID {
		t.Fatalf("got %s then %s, want the sent message twice", first.UUID, again.UUID)
	}
	return again
}

// CheckEarlyDelivered publishes to topic before any handler subscribed to
// it and requires every message on the first subscription.
func CheckEarlyDelivered(t *testing.T, tr *broker.Transport, topic string) {
	t.Helper()
	sent := PublishN(t, tr, topic, 3)
	got := UUIDs(Receive(t, Subscribe(t, tr, "late", topic), len(sent)))
	for id := range sent {
		if !got[id] {
			t.Errorf("message %s published before the subscription was not delivered", id)
		}
	}
}

// CheckCloseEnds opens a transport with open, subscribes two handlers to
// topic, closes it, and requires both subscriptions to have ended when
// Close returns, Publish to fail, and a second Close to be harmless.
func CheckCloseEnds(t *testing.T, open Opener, topic string) {
	t.Helper()
	tr, err := open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	subs := []<-chan *message.Message{Subscribe(t, tr, "a", topic), Subscribe(t, tr, "b", topic)}
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for i, ch := range subs {
		CheckClosed(t, fmt.Sprintf("subscription %d", i+1), ch)
	}
	if err := tr.Publisher().Publish(topic, message.NewMessage(watermill.NewUUID(), nil)); err == nil {
		t.Error("publishing after close succeeded")
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// Published is the outcome of one Publish call of PublishEach.
type Published struct {
	UUID string
	Err  error
}

// PublishEach publishes n messages, each in a Publish call of its own on a
// goroutine of its own, as a service's many publishers do (the in-process
// transport's Publish returns only once the message was acked). It returns
// them by UUID, and a channel that receives each call's outcome.
func PublishEach(t *testing.T, tr *broker.Transport, topic string, n int) (map[string]*message.Message, <-chan Published) {
	t.Helper()
	sent := make(map[string]*message.Message, n)
	done := make(chan Published, n)
	for i := range n {
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, `{"n":%d}`, i))
		m.Metadata.Set(KeyMetadata, "key-"+m.UUID)
		sent[m.UUID] = m
		go func() { done <- Published{m.UUID, tr.Publisher().Publish(topic, m)} }()
	}
	return sent, done
}

// Outcomes waits for n outcomes of PublishEach, failing the test after 10
// seconds.
func Outcomes(t *testing.T, done <-chan Published, n int) map[string]error {
	t.Helper()
	got := make(map[string]error, n)
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case p := <-done:
			got[p.UUID] = p.Err
		case <-timeout:
			t.Fatalf("%d of %d Publish calls returned within 10s", len(got), n)
		}
	}
	return got
}

// Hold settles nothing: the test settles the messages later.
func Hold(*message.Message) bool { return true }

// CheckInFlight subscribes a handler holding n messages in flight to
// topic and publishes total messages, more than n (enough for every lane
// to have one where lanes read ahead): the subscription must hand out n
// while none is settled. It then nacks one of them and acks the others,
// and requires the nacked one back with the rest, and every Publish to
// succeed.
func CheckInFlight(t *testing.T, tr *broker.Transport, topic string, n, total int) {
	t.Helper()
	ch := SubscribeN(t, tr, "lanes", topic, n)
	sent, done := PublishEach(t, tr, topic, total)
	held := Receive(t, ch, n, Hold)
	if got := UUIDs(held); len(got) != n {
		t.Fatalf("handed out %d distinct messages of %d, want %d at once", len(got), len(held), n)
	}
	for _, m := range held {
		if _, ok := sent[m.UUID]; !ok {
			t.Fatalf("handed out %s, not a message that was sent", m.UUID)
		}
	}
	held[0].Nack()
	for _, m := range held[1:] {
		m.Ack()
	}
	again := UUIDs(Receive(t, ch, total-n+1))
	if !again[held[0].UUID] {
		t.Errorf("the nacked message %s did not come back", held[0].UUID)
	}
	for id := range UUIDs(held) {
		delete(sent, id)
	}
	for id := range sent {
		if !again[id] {
			t.Errorf("message %s was not handed out after the first %d", id, n)
		}
	}
	for id, err := range Outcomes(t, done, total) {
		if err != nil {
			t.Errorf("publishing %s: %v", id, err)
		}
	}
}

// CheckCloseHandsBack subscribes a handler holding n messages in flight to
// topic and publishes 3n. It acks the first n handed out, holds the next n
// and closes the subscriber, whose subscription must have ended when Close
// returns: a new subscriber of the handler must be handed the other 2n,
// each once, so that every message was acked once.
func CheckCloseHandsBack(t *testing.T, tr *broker.Transport, topic string, n int) {
	t.Helper()
	sub, err := tr.Subscriber("handback", n)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := sub.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	sent := PublishN(t, tr, topic, 3*n)
	// The broker has the acks of the first n once Close returned: a lane
	// takes its next message only once the broker has its ack, and a
	// Redis Streams subscription sends the acks it queued as it ends.
	acked := UUIDs(Receive(t, ch, n))
	Receive(t, ch, n, Hold)
	if err := sub.Close(); err != nil {
		t.Fatalf("closing the subscriber: %v", err)
	}
	CheckClosed(t, "the subscription", ch)
	again := SubscribeN(t, tr, "handback", topic, n)
	rest := Receive(t, again, 2*n)
	select {
	case m := <-again:
		m.Ack()
		rest = append(rest, m)
	case <-time.After(300 * time.Millisecond): // a message acked twice would show now
	}
	for _, m := range rest {
		if _, ok := sent[m.UUID]; !ok || acked[m.UUID] {
			t.Errorf("the second subscriber got %s: acked before the close, or never sent", m.UUID)
		}
	}
	if got := UUIDs(rest); len(got) != len(rest) || len(got)+len(acked) != len(sent) {
		t.Errorf("acked %d before the close and %d (%d distinct) after, want each of the %d once",
			len(acked), len(rest), len(got), len(sent))
	}
}

// CheckClosed fails the test unless ch is closed now, as a subscription
// is once Close returned (Watermill's Pub/Sub suite expects it too).
func CheckClosed(t *testing.T, name string, ch <-chan *message.Message) {
	t.Helper()
	select {
	case m, open := <-ch:
		if open {
			m.Nack()
			t.Errorf("%s handed out %s after its subscriber closed", name, m.UUID)
		}
	default:
		t.Errorf("%s still open when Close returned", name)
	}
}

// NackUntilClosed nacks what ch still hands out until it closes, failing
// the test if it is open 10 seconds later.
func NackUntilClosed(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, open := <-ch:
			if !open {
				return
			}
			m.Nack()
		case <-timeout:
			t.Fatal("the subscription still open 10s after its subscriber closed")
		}
	}
}
