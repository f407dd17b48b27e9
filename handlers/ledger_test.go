package handlers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
)

// ledgerBackends makes a fresh, empty ledger of each implementation.
var ledgerBackends = map[string]func(t *testing.T) handlers.Ledger{
	"memory":   func(*testing.T) handlers.Ledger { return handlers.NewMemoryLedger() },
	"postgres": func(t *testing.T) handlers.Ledger { return handlers.NewPostgresLedger(postgresPool(t)) },
}

// postgresPool returns a pool on a fresh schema with every migration applied.
func postgresPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL integration test skipped in -short mode")
	}
	url := testenv.PostgresSchema(t)
	ctx := context.Background()
	if err := migrations.UpURL(ctx, url); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestLedger is the conformance suite every Ledger passes.
func TestLedger(t *testing.T) {
	t.Parallel()
	for name, newLedger := range ledgerBackends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testLedger(t, newLedger)
		})
	}
}

func testLedger(t *testing.T, newLedger func(t *testing.T) handlers.Ledger) {
	ctx := context.Background()
	p := handlers.Payment{ID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR"}

	t.Run("recorded payment is accepted", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		mustRecord(t, l, p)
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted})
		assertSummary(t, l, handlers.Summary{})
	})

	t.Run("recording again is a no-op, with other details a conflict", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		first := mustRecord(t, l, p)
		mustDo(t, l.AppendCharge(ctx, p, "ch-1"))
		if again := mustRecord(t, l, p); !again.Equal(first) {
			t.Errorf("re-recorded payment accepted at %v, first at %v: a re-sent request would yield another event", again, first)
		}
		other := p
		other.AmountCents++
		if _, err := l.RecordPayment(ctx, other); !errors.Is(err, handlers.ErrConflict) {
			t.Errorf("RecordPayment with another amount: err = %v, want ErrConflict", err)
		}
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
	})

	t.Run("unknown payment is not found", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		mustRecord(t, l, p)
		if _, err := l.Payment(ctx, "pay-2"); !errors.Is(err, handlers.ErrNotFound) {
			t.Errorf("Payment(pay-2): err = %v, want ErrNotFound", err)
		}
	})

	t.Run("every charge appends a row", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		mustRecord(t, l, p)
		mustDo(t, l.AppendCharge(ctx, p, "ch-1"))
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
		mustDo(t, l.AppendCharge(ctx, p, "ch-1"))
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 2})
		assertSummary(t, l, handlers.Summary{Payments: 1, Charges: 2})
	})

	t.Run("status only moves forward", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		mustRecord(t, l, p)
		mustDo(t, l.AppendCharge(ctx, p, "ch-1"))
		mustDo(t, l.AppendNotification(ctx, p, "ch-1"))
		mustDo(t, l.AppendCharge(ctx, p, "ch-2"))
		mustRecord(t, l, p)
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusNotified, Charges: 2, Notifications: 1})
	})

	t.Run("side effects of an unrecorded payment record it", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		q := handlers.Payment{ID: "pay-2", CustomerID: "cus-2", AmountCents: 1, Currency: "USD"}
		mustDo(t, l.AppendCharge(ctx, p, "ch-1"))
		mustDo(t, l.AppendNotification(ctx, q, "ch-2"))
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
		assertState(t, l, handlers.PaymentState{PaymentID: q.ID, Status: handlers.StatusNotified, Notifications: 1})
		// The recorded details are those of the first side effect.
		if _, err := l.RecordPayment(ctx, p); err != nil {
			t.Errorf("RecordPayment after AppendCharge: %v", err)
		}
	})

	t.Run("summary counts distinct charged payments and all rows", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		q := handlers.Payment{ID: "pay-2", CustomerID: "cus-1", AmountCents: 99, Currency: "GBP"}
		r := handlers.Payment{ID: "pay-3", CustomerID: "cus-3", AmountCents: 5, Currency: "EUR"}
		for _, x := range []handlers.Payment{p, q, r} {
			mustRecord(t, l, x)
		}
		mustDo(t, l.AppendCharge(ctx, p, "ch-1"))
		mustDo(t, l.AppendCharge(ctx, p, "ch-2"))
		mustDo(t, l.AppendCharge(ctx, q, "ch-3"))
		mustDo(t, l.AppendNotification(ctx, p, "ch-1"))
		assertSummary(t, l, handlers.Summary{Payments: 2, Charges: 3, Notifications: 1})
	})

	t.Run("concurrent charges all append", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		// The payment is not recorded first: the charges race to record it.
		const n = 50
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() { errs <- l.AppendCharge(ctx, p, "ch-same") })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			mustDo(t, err)
		}
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: n})
		assertSummary(t, l, handlers.Summary{Payments: 1, Charges: n})
	})

	t.Run("cancelled context changes nothing", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		mustRecord(t, l, p)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		q := handlers.Payment{ID: "pay-2", CustomerID: "cus-2", AmountCents: 1, Currency: "USD"}
		calls := map[string]error{
			"AppendCharge":       l.AppendCharge(cancelled, p, "ch-1"),
			"AppendNotification": l.AppendNotification(cancelled, p, "ch-1"),
		}
		_, calls["RecordPayment"] = l.RecordPayment(cancelled, q)
		_, calls["Payment"] = l.Payment(cancelled, p.ID)
		_, calls["Summary"] = l.Summary(cancelled)
		for name, err := range calls {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: err = %v, want context.Canceled", name, err)
			}
		}
		assertState(t, l, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted})
		assertSummary(t, l, handlers.Summary{})
	})
}

// mustRecord records p and returns when it was first accepted.
func mustRecord(t *testing.T, l handlers.Ledger, p handlers.Payment) time.Time {
	t.Helper()
	at, err := l.RecordPayment(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if at.IsZero() {
		t.Fatalf("RecordPayment(%s) returned no acceptance time", p.ID)
	}
	return at
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func assertState(t *testing.T, l handlers.Ledger, want handlers.PaymentState) {
	t.Helper()
	got, err := l.Payment(context.Background(), want.PaymentID)
	if err != nil {
		t.Fatalf("Payment(%q): %v", want.PaymentID, err)
	}
	if got != want {
		t.Errorf("Payment(%q) = %+v, want %+v", want.PaymentID, got, want)
	}
}

func assertSummary(t *testing.T, l handlers.Ledger, want handlers.Summary) {
	t.Helper()
	got, err := l.Summary(context.Background())
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	if got != want {
		t.Errorf("Summary = %+v, want %+v", got, want)
	}
}
