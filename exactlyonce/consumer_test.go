package exactlyonce_test

import (
	"context"
	"testing"

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
