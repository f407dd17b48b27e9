package handlers_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/handlers"
)

type txKey struct{}

func txFromContext(ctx context.Context) (handlers.Querier, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// TestPostgresLedgerJoinsTransaction checks that the ledger's writes made in
// a caller's transaction, found in the context or given with With, show
// only inside it until it ends and vanish when it rolls back.
func TestPostgresLedgerJoinsTransaction(t *testing.T) {
	t.Parallel()
	ways := map[string]func(l *handlers.PostgresLedger, tx pgx.Tx) (handlers.Ledger, context.Context){
		"WithTxFromContext": func(l *handlers.PostgresLedger, tx pgx.Tx) (handlers.Ledger, context.Context) {
			return l, context.WithValue(context.Background(), txKey{}, tx)
		},
		"With": func(l *handlers.PostgresLedger, tx pgx.Tx) (handlers.Ledger, context.Context) {
			return l.With(tx), context.Background()
		},
	}
	for name, join := range ways {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := postgresPool(t)
			l := handlers.NewPostgresLedger(pool, handlers.WithTxFromContext(txFromContext))
			ctx := context.Background()
			p := handlers.Payment{ID: "pay-1", CustomerID: "cus-1", AmountCents: 100, Currency: "EUR"}

			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			inTx, txCtx := join(l, tx)
			mustDo(t, inTx.AppendCharge(txCtx, p, "ch-1"))
			mustDo(t, inTx.AppendNotification(txCtx, p, "ch-1"))

			got, err := inTx.Summary(txCtx)
			if err != nil {
				t.Fatal(err)
			}
			if want := (handlers.Summary{Payments: 1, Charges: 1, Notifications: 1}); got != want {
				t.Errorf("Summary in transaction = %+v, want %+v", got, want)
			}
			assertSummary(t, l, handlers.Summary{}) // not visible outside yet

			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			assertSummary(t, l, handlers.Summary{})
			if _, err := l.Payment(ctx, p.ID); err == nil {
				t.Error("payment found after its transaction rolled back")
			}
		})
	}
}
