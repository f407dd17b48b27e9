package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/ledgertest"
	"github.com/onceflow/onceflow/handlers/postgres"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/migrations"
	memstore "github.com/onceflow/onceflow/stores/memory"
	storepg "github.com/onceflow/onceflow/stores/postgres"
)

// migrated is a pool on a fresh schema with the records' migrations and
// the ledger's own applied.
func migrated(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := testenv.MigratedPostgres(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	if err := migrations.Up(t.Context(), db, migrations.Of("payments", postgres.Migrations())); err != nil {
		t.Fatalf("migrating the ledger: %v", err)
	}
	return pool
}

func TestLedger(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(t *testing.T) handlers.Ledger { return postgres.NewLedger(migrated(t)) })
}

// unitContext returns a context carrying tx as a [storepg.Unit]'s context
// does, by beginning a unit on it: the unit's transaction is a savepoint in
// tx, which rolls back with it.
func unitContext(t *testing.T, tx pgx.Tx) context.Context {
	t.Helper()
	store, err := storepg.New(tx, storepg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := store.Begin(context.Background(), tx)
	if err != nil {
		t.Fatal(err)
	}
	return u.Context()
}

// TestLedgerJoinsTransaction checks that the ledger's writes made in a
// caller's transaction, found in the context or given with With, show only
// inside it until it ends and vanish when it rolls back.
func TestLedgerJoinsTransaction(t *testing.T) {
	t.Parallel()
	ways := map[string]func(t *testing.T, l *postgres.Ledger, tx pgx.Tx) (handlers.Ledger, context.Context){
		"WithTxFromContext": func(t *testing.T, l *postgres.Ledger, tx pgx.Tx) (handlers.Ledger, context.Context) {
			return l, unitContext(t, tx)
		},
		"With": func(_ *testing.T, l *postgres.Ledger, tx pgx.Tx) (handlers.Ledger, context.Context) {
			return l.With(tx), context.Background()
		},
	}
	for name, join := range ways {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := migrated(t)
			l := postgres.NewLedger(pool, postgres.WithTxFromContext(storepg.TxFromContext))
			ctx := context.Background()
			p := handlers.Payment{ID: "pay-1", CustomerID: "cus-1", AmountCents: 100, Currency: "EUR"}

			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			inTx, txCtx := join(t, l, tx)
			ledgertest.Must(t, inTx.AppendCharge(txCtx, p, "ch-1"))
			ledgertest.Must(t, inTx.AppendNotification(txCtx, p, "ch-1"))
			ledgertest.Must(t, inTx.AppendReceipt(txCtx, p, "ch-1"))

			got, err := inTx.Summary(txCtx, p.Client)
			if err != nil {
				t.Fatal(err)
			}
			if want := (handlers.Summary{Payments: 1, Charges: 1, Notifications: 1, Receipts: 1}); got != want {
				t.Errorf("Summary in transaction = %+v, want %+v", got, want)
			}
			ledgertest.AssertSummary(t, l, p.Client, handlers.Summary{}) // not visible outside yet

			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			ledgertest.AssertSummary(t, l, p.Client, handlers.Summary{})
			if _, err := l.Payment(ctx, p.Client, p.ID); err == nil {
				t.Error("payment found after its transaction rolled back")
			}
		})
	}
}

// TestPaymentOwnerMigration upgrades a ledger that has payments from
// before they had an owner: they become the anonymous client's, whole,
// and a client's payment of the same id is another one. Down refuses,
// changing nothing, while two clients share an id, and succeeds once they
// do not.
func TestPaymentOwnerMigration(t *testing.T) {
	t.Parallel()
	pool, provider := ledgerAt(t, 2)
	ctx := t.Context()
	for _, stmt := range []string{
		`INSERT INTO payments (payment_id, customer_id, amount_cents, currency, status) VALUES ('pay-old', 'cus-1', 100, 'EUR', 'charged')`,
		`INSERT INTO charges (payment_id, amount_cents, currency, charge_id) VALUES ('pay-old', 100, 'EUR', 'ch-1')`,
		`INSERT INTO receipts (payment_id, customer_id, amount_cents, currency, charge_id) VALUES ('pay-old', 'cus-1', 100, 'EUR', 'ch-1')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("migrating the ledger up: %v", err)
	}

	l := postgres.NewLedger(pool)
	ledgertest.AssertState(t, l, "", handlers.PaymentState{PaymentID: "pay-old", Status: handlers.StatusCharged, Charges: 1, Receipts: 1})
	ledgertest.AssertSummary(t, l, "", handlers.Summary{Payments: 1, Charges: 1, Receipts: 1})
	ledgertest.AssertNotFound(t, l, "client-a", "pay-old")
	a := handlers.Payment{Client: "client-a", ID: "pay-old", CustomerID: "cus-a", AmountCents: 7, Currency: "USD"}
	ledgertest.Must(t, l.AppendCharge(ctx, a, "ch-a"))
	ledgertest.AssertState(t, l, a.Client, handlers.PaymentState{PaymentID: "pay-old", Status: handlers.StatusCharged, Charges: 1})

	if _, err := provider.DownTo(ctx, 2); err == nil {
		t.Fatal("down succeeded while two clients have payments of one id")
	}
	ledgertest.AssertState(t, l, a.Client, handlers.PaymentState{PaymentID: "pay-old", Status: handlers.StatusCharged, Charges: 1})
	if _, err := pool.Exec(ctx, `DELETE FROM charges WHERE client = 'client-a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM payments WHERE client = 'client-a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, 2); err != nil {
		t.Fatalf("down: %v", err)
	}
	var charges int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM charges WHERE payment_id = 'pay-old'`).Scan(&charges); err != nil || charges != 1 {
		t.Fatalf("after down: %d charges of pay-old, %v; want 1", charges, err)
	}
}

// TestEffectKeyMigration upgrades a ledger that has side-effect rows from
// before they had effect keys: they stay, keyless, and are counted; a
// run's appends are kept once from then on. Down drops the keys and keeps
// every row, and up again adds them back.
func TestEffectKeyMigration(t *testing.T) {
	t.Parallel()
	pool, provider := ledgerAt(t, 3)
	ctx := t.Context()
	for _, stmt := range []string{
		`INSERT INTO payments (payment_id, customer_id, amount_cents, currency, status) VALUES ('pay-old', 'cus-1', 100, 'EUR', 'charged')`,
		`INSERT INTO charges (payment_id, amount_cents, currency, charge_id) VALUES ('pay-old', 100, 'EUR', 'ch-1')`,
		`INSERT INTO charges (payment_id, amount_cents, currency, charge_id) VALUES ('pay-old', 100, 'EUR', 'ch-2')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("migrating the ledger up: %v", err)
	}

	l := postgres.NewLedger(pool)
	p := handlers.Payment{ID: "pay-old", CustomerID: "cus-1", AmountCents: 100, Currency: "EUR"}
	store := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = store.Close() })
	r, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(ctx, handlers.ChargePaymentHandler, p.IdempotencyKey(), nil, func(ctx context.Context) ([]byte, error) {
		return nil, errors.Join(l.AppendCharge(ctx, p, "ch-3"), l.AppendCharge(ctx, p, "ch-3"))
	})
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 3})

	if _, err := provider.DownTo(ctx, 3); err != nil {
		t.Fatalf("down: %v", err)
	}
	var charges int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM charges WHERE payment_id = 'pay-old'`).Scan(&charges); err != nil || charges != 3 {
		t.Fatalf("after down: %d charges of pay-old, %v; want 3", charges, err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("migrating the ledger up again: %v", err)
	}
	ledgertest.AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 3})
}

// ledgerAt returns a database with the store's migrations and the
// ledger's up to version, and the ledger's migration provider on it.
func ledgerAt(t *testing.T, version int64) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	pool := testenv.MigratedPostgres(t)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	provider, err := migrations.NewProvider(t.Context(), db, migrations.Of("payments", postgres.Migrations()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(t.Context(), version); err != nil {
		t.Fatalf("migrating the ledger to version %d: %v", version, err)
	}
	return pool, provider
}
