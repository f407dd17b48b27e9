package exactlyonce_test

import (
	"context"
	"testing"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"

	"github.com/onceflow/onceflow/exactlyonce"
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
	tx, ok := exactlyonce.ConsumerTx(msg.Context())
	if !ok {
		t.Fatal("ConsumerTx: no consumer transaction in the message's context")
	}
	ctx := t.Context()
	unit, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}

	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("the subscriber closed (%v), ending the consumer transaction, while a unit was open in it", err)
	case <-time.After(300 * time.Millisecond):
	}
	var one int
	if err := unit.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the open unit's query: %d, %v", one, err)
	}
	if err := unit.Commit(ctx); err != nil {
		t.Fatalf("committing the unit: %v", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("closing the subscriber: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the subscriber did not close within 10s of the unit's end")
	}
}
