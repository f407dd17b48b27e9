package exactlyonce_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/exactlyonce/exactlyoncetest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// ConsumerTx finds the transaction of a subscriber on ConsumerBeginner
// only.
func TestConsumerTxIsFoundOnlyInAConsumersMessage(t *testing.T) {
	pool := testenv.Postgres(t)
	if _, ok := exactlyonce.ConsumerTx(context.Background()); ok {
		t.Error("ConsumerTx found a transaction in an empty context")
	}
	for _, c := range []struct {
		name string
		db   wsql.Beginner
		want bool
	}{
		{"ConsumerBeginner", exactlyonce.ConsumerBeginner(pool), true},
		{"BeginnerFromPgx", wsql.BeginnerFromPgx(pool), false},
	} {
		msgs := subscribe(t, subscriber(t, c.db, c.name), "in")
		publish(t, pool, "in")
		msg := next(t, msgs)
		if _, ok := exactlyonce.ConsumerTx(msg.Context()); ok != c.want {
			t.Errorf("%s: ConsumerTx found a transaction: %v, want %v", c.name, ok, c.want)
		}
		msg.Ack()
	}
}

// A unit of work open in the consumer transaction when the subscriber
// closes (an attempt a graceful shutdown lets run to its end) holds the
// transaction's end back: the subscriber would otherwise commit it at once,
// on the connection the unit is still using, with the unit half done.
func TestSubscriberCloseWaitsForAnOpenUnit(t *testing.T) {
	pool := testenv.Postgres(t)
	sub := subscriber(t, exactlyonce.ConsumerBeginner(pool), "charge")
	msgs := subscribe(t, sub, "in")
	publish(t, pool, "in")
	msg := next(t, msgs)
	exactlyoncetest.CloseWaitsForOpenUnit(t, sub, msg.Context())
}

// A unit of work still running when its message's ack deadline passes
// holds back the subscriber's statements: watermill-sql stops waiting for
// the ack, records the offset of the messages acked before it and commits,
// and would do so on the connection the unit is using, mid-statement. The
// unit ends as it would have, and the message comes again to find what it
// committed.
func TestAckDeadlineWaitsForAnOpenUnit(t *testing.T) {
	f := newFixture(t)
	deadline := 100 * time.Millisecond
	sub, err := wsql.NewSubscriber(exactlyonce.ConsumerBeginner(f.pool), wsql.SubscriberConfig{
		ConsumerGroup:    "slow",
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
		PollInterval:     10 * time.Millisecond,
		ResendInterval:   10 * time.Millisecond,
		AckDeadline:      &deadline,
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	first, second := publish(t, f.pool, "in"), publish(t, f.pool, "in")
	msgs := subscribe(t, sub, "in") // one query reads both: they share a consumer transaction
	if msg := next(t, msgs); msg.UUID != first.UUID {
		t.Fatalf("first delivery %s, want %s", msg.UUID, first.UUID)
	} else {
		msg.Ack()
	}

	msg := next(t, msgs)
	tx, ok := exactlyonce.ConsumerTx(msg.Context())
	if !ok {
		t.Fatal("ConsumerTx: no consumer transaction in the second message's context")
	}
	ctx := t.Context()
	unit, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(4 * deadline); time.Now().Before(end); { // busy on the connection across the deadline
		if _, err := unit.Exec(ctx, "SELECT pg_sleep(0.001)"); err != nil {
			t.Fatalf("the unit's statement after %v: %v", time.Since(end.Add(-4*deadline)), err)
		}
	}
	if _, err := unit.Exec(ctx, "INSERT INTO effects (key) VALUES ($1)", second.UUID); err != nil {
		t.Fatal(err)
	}
	if err := unit.Commit(ctx); err != nil {
		t.Fatalf("committing the unit: %v", err)
	}
	msg.Nack() // too late: the subscriber gave up on it at the deadline

	again := next(t, msgs)
	if again.UUID != second.UUID {
		t.Fatalf("delivered %s after the deadline, want %s again", again.UUID, second.UUID)
	}
	again.Ack()
	waitFor(t, "the unit's effect committed", func() bool { return slices.Equal(f.effects(t), []string{second.UUID}) })
}
