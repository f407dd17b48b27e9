package exactlyonce_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/consume"
)

var _ consume.Outbox = exactlyonce.Outbox{}.Write

// recording is a publisher that keeps what it is given.
type recording struct{ topics []string }

func (p *recording) Publish(topic string, _ ...*message.Message) error {
	p.topics = append(p.topics, topic)
	return nil
}

func (*recording) Close() error { return nil }

// countingDecorator counts the publishes of the publisher it decorates.
func countingDecorator(n *atomic.Int32) func(message.Publisher) message.Publisher {
	return func(pub message.Publisher) message.Publisher {
		return publisherFunc(func(topic string, msgs ...*message.Message) error {
			n.Add(1)
			return pub.Publish(topic, msgs...)
		})
	}
}

type publisherFunc func(topic string, msgs ...*message.Message) error

func (f publisherFunc) Publish(topic string, msgs ...*message.Message) error {
	return f(topic, msgs...)
}
func (publisherFunc) Close() error { return nil }

// A handler's messages written in a unit of work reach their topic's table
// only if the unit commits; outside a unit they go to the Publisher.
func TestOutboxWritesWithTheUnitOfWork(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	var decorated atomic.Int32
	outside := &recording{}
	ob := exactlyonce.Outbox{Topics: map[string]string{"charge": "charged"}, Publisher: outside,
		TopicPrefix: "t.", Decorate: countingDecorator(&decorated)}
	// A publisher on a transaction cannot create the table: subscribe first.
	charged := subscribe(t, subscriber(t, exactlyonce.ConsumerBeginner(f.pool), "notify"), "t.charged")

	rolledBack := message.NewMessage(watermill.NewUUID(), []byte(`{"n":1}`))
	committed := message.NewMessage(watermill.NewUUID(), []byte(`{"n":2}`))
	committed.Metadata.Set(consume.MetadataKey, "pay-2")
	for _, c := range []struct {
		msg    *message.Message
		commit bool
	}{{rolledBack, false}, {committed, true}} {
		u, err := f.transactor.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ob.Write(u.Context(), "charge", []*message.Message{c.msg}); err != nil {
			t.Fatal(err)
		}
		if c.commit {
			err = u.Commit(ctx)
		} else {
			err = u.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got := next(t, charged)
	got.Ack()
	if got.UUID != committed.UUID || got.Metadata.Get(consume.MetadataKey) != "pay-2" {
		t.Fatalf("received %s %v, want the committed message %s with its metadata", got.UUID, got.Metadata, committed.UUID)
	}

	if err := ob.UnitPublisher().Publish("charged", message.NewMessage(watermill.NewUUID(), nil)); err != nil {
		t.Fatal(err)
	}
	if len(outside.topics) != 1 || outside.topics[0] != "charged" {
		t.Errorf("published outside a unit of work to %v, want [charged] on the Publisher", outside.topics)
	}
	if decorated.Load() != 3 {
		t.Errorf("Decorate wrapped %d publishes, want 3", decorated.Load())
	}
	if err := ob.Write(ctx, "unknown", []*message.Message{committed}); err == nil || !strings.Contains(err.Error(), "no output topic") {
		t.Errorf("Write for a handler without a topic: %v, want an error", err)
	}
}

// With RelayTopic the messages are written to the outbox table, and the
// relay publishes each to its own topic on another broker, with its UUID
// and metadata.
func TestOutboxRelayForwardsToTheBroker(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	broker := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = broker.Close() })
	ob := exactlyonce.Outbox{Topics: map[string]string{"charge": "charged"}, Publisher: broker, RelayTopic: "outbox"}
	relaySub := subscriber(t, exactlyonce.ConsumerBeginner(f.pool), exactlyonce.DefaultRelayName)
	if err := relaySub.SubscribeInitialize("outbox"); err != nil {
		t.Fatal(err)
	}

	msg := message.NewMessage(watermill.NewUUID(), []byte(`{"n":1}`))
	msg.Metadata.Set(consume.MetadataKey, "pay-1")
	u, err := f.transactor.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Write(u.Context(), "charge", []*message.Message{msg}); err != nil {
		t.Fatal(err)
	}
	if err := u.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	relay, err := exactlyonce.NewRelay(relaySub, broker, exactlyonce.RelayConfig{Topic: "outbox"})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- relay.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := relay.Close(); err != nil {
			t.Errorf("closing the relay: %v", err)
		}
		if err := <-runDone; err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	charged := subscribe(t, broker, "charged")
	got := next(t, charged)
	got.Ack()
	if got.UUID != msg.UUID || got.Metadata.Get(consume.MetadataKey) != "pay-1" {
		t.Fatalf("relayed %s %v, want %s with its metadata", got.UUID, got.Metadata, msg.UUID)
	}
}

func TestNewRelayNeedsTheOutboxTopic(t *testing.T) {
	broker := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	t.Cleanup(func() { _ = broker.Close() })
	if _, err := exactlyonce.NewRelay(broker, broker, exactlyonce.RelayConfig{}); err == nil {
		t.Error("NewRelay without a topic succeeded")
	}
	if _, err := exactlyonce.NewRelay(broker, broker, exactlyonce.RelayConfig{Topic: "outbox"}); err != nil {
		t.Errorf("NewRelay: %v", err)
	}
}
