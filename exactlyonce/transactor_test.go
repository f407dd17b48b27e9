package exactlyonce_test

import (
	"slices"
	"testing"

	"github.com/onceflow/onceflow/exactlyonce"
)

// Each unit of work the Transactor begins for a consumed message is a
// savepoint of the consumer's transaction: a rolled back attempt leaves
// nothing, and a committed one is kept, then committed with the offset
// once the message is acked.
func TestTransactorUnitIsASavepointOfTheConsumerTransaction(t *testing.T) {
	f := newFixture(t)
	msgs := subscribe(t, subscriber(t, exactlyonce.ConsumerBeginner(f.pool), "charge"), "in")
	publish(t, f.pool, "in")
	msg := next(t, msgs)
	ctx := msg.Context()

	failed, err := f.transactor.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effect(t, failed.Context(), "failed attempt")
	if err := failed.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	kept, err := f.transactor.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effect(t, kept.Context(), "kept attempt")
	if err := kept.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.effects(t); len(got) != 0 {
		t.Fatalf("before the ack: committed effects %v, want none (the consumer's transaction is open)", got)
	}
	msg.Ack()
	waitFor(t, "the consumer's transaction committed", func() bool { return len(f.effects(t)) > 0 })
	if got := f.effects(t); !slices.Equal(got, []string{"kept attempt"}) {
		t.Fatalf("committed effects %v, want [kept attempt]", got)
	}
}

// Outside a consumer's transaction a unit of work is a transaction of its
// own on the pool.
func TestTransactorUnitOutsideAConsumerIsATransaction(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u, err := f.transactor.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effect(t, u.Context(), "k")
	if err := u.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.effects(t); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("committed effects %v, want [k]", got)
	}
	if _, err := (exactlyonce.Transactor{}).Begin(ctx); err == nil {
		t.Error("a Transactor without DB and Store began a unit")
	}
}
