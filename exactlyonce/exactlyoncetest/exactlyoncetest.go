// Package exactlyoncetest checks a watermill-sql subscriber built on
// [exactlyonce.ConsumerBeginner] against what transaction mode needs of it,
// as stores/storetest checks a store: the exactlyonce tests run it on a
// bare subscriber, the sql transport's on its own.
package exactlyoncetest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/onceflow/onceflow/exactlyonce"
)

// CloseWaitsForOpenUnit checks, on a SQL subscriber built on
// exactlyonce.ConsumerBeginner and one message it delivered (its context
// msgCtx, not yet acked), that a unit of work open in the consumer's
// transaction when the subscriber closes holds the transaction's end back
// until the unit ends: the subscriber would otherwise commit it at once,
// on the connection the unit is still using, with the unit half done.
func CloseWaitsForOpenUnit(t testing.TB, sub io.Closer, msgCtx context.Context) {
	t.Helper()
	tx, ok := exactlyonce.ConsumerTx(msgCtx)
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
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber did not close within 10s of the unit's end")
	}
}
