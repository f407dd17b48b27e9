// Package ledgertest is the one conformance suite that every
// [handlers.Ledger] passes against its real backend. Each implementation's
// test calls Run with a function that makes fresh ledgers. The cases about
// effect keys append in runs of a real receiver, on a store in memory.
package ledgertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/handlers"
)

// Run runs the conformance suite against the ledgers newLedger makes: each
// call returns a fresh, empty ledger for one test (register any cleanup with
// t.Cleanup). The cases run in parallel.
func Run(t *testing.T, newLedger func(t *testing.T) handlers.Ledger) {
	t.Helper()
	ctx := context.Background()
	p := handlers.Payment{ID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR"}

	t.Run("recorded payment is accepted", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		MustRecord(t, l, p)
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted})
		AssertSummary(t, l, "", handlers.Summary{})
	})

	t.Run("recording again is a no-op, with other details a conflict", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		first := MustRecord(t, l, p)
		Must(t, l.AppendCharge(ctx, p, "ch-1"))
		if again := MustRecord(t, l, p); !again.Equal(first) {
			t.Errorf("re-recorded payment accepted at %v, first at %v: a re-sent request would yield another event", again, first)
		}
		other := p
		other.AmountCents++
		if _, err := l.RecordPayment(ctx, other); !errors.Is(err, handlers.ErrConflict) {
			t.Errorf("RecordPayment with another amount: err = %v, want ErrConflict", err)
		}
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
	})

	t.Run("unknown payment is not found", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		MustRecord(t, l, p)
		AssertNotFound(t, l, "", "pay-2")
	})

	t.Run("every charge appends a row", func(t *testing.T) {
		t.Parallel()
		appendsRows(t, newLedger(t), p, func(l handlers.Ledger) error { return l.AppendCharge(ctx, p, "ch-1") },
			func(n int64) (handlers.PaymentState, handlers.Summary) {
				return handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: n},
					handlers.Summary{Payments: 1, Charges: n}
			})
	})

	t.Run("every receipt appends a row", func(t *testing.T) {
		t.Parallel()
		appendsRows(t, newLedger(t), p, func(l handlers.Ledger) error { return l.AppendReceipt(ctx, p, "ch-1") },
			func(n int64) (handlers.PaymentState, handlers.Summary) {
				return handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted, Receipts: n},
					handlers.Summary{Receipts: n}
			})
	})

	t.Run("status only moves forward", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		MustRecord(t, l, p)
		Must(t, l.AppendCharge(ctx, p, "ch-1"))
		Must(t, l.AppendNotification(ctx, p, "ch-1"))
		Must(t, l.AppendCharge(ctx, p, "ch-2"))
		Must(t, l.AppendReceipt(ctx, p, "ch-2"))
		MustRecord(t, l, p)
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusNotified, Charges: 2, Notifications: 1, Receipts: 1})
	})

	t.Run("side effects of an unrecorded payment record it", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		q := handlers.Payment{ID: "pay-2", CustomerID: "cus-2", AmountCents: 1, Currency: "USD"}
		r := handlers.Payment{ID: "pay-3", CustomerID: "cus-3", AmountCents: 7, Currency: "GBP"}
		Must(t, l.AppendCharge(ctx, p, "ch-1"))
		Must(t, l.AppendNotification(ctx, q, "ch-2"))
		Must(t, l.AppendReceipt(ctx, r, "ch-3"))
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
		AssertState(t, l, "", handlers.PaymentState{PaymentID: q.ID, Status: handlers.StatusNotified, Notifications: 1})
		AssertState(t, l, "", handlers.PaymentState{PaymentID: r.ID, Status: handlers.StatusCharged, Receipts: 1})
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
			MustRecord(t, l, x)
		}
		Must(t, l.AppendCharge(ctx, p, "ch-1"))
		Must(t, l.AppendCharge(ctx, p, "ch-2"))
		Must(t, l.AppendCharge(ctx, q, "ch-3"))
		Must(t, l.AppendNotification(ctx, p, "ch-1"))
		Must(t, l.AppendReceipt(ctx, p, "ch-1"))
		Must(t, l.AppendReceipt(ctx, r, "ch-4"))
		AssertSummary(t, l, "", handlers.Summary{Payments: 2, Charges: 3, Notifications: 1, Receipts: 2})
	})

	t.Run("payment ids are per client", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		a := handlers.Payment{Client: "client-a", ID: p.ID, CustomerID: "cus-a", AmountCents: 100, Currency: "EUR"}
		b := handlers.Payment{Client: "client-b", ID: p.ID, CustomerID: "cus-b", AmountCents: 200, Currency: "USD"}
		MustRecord(t, l, a)
		AssertNotFound(t, l, b.Client, p.ID) // not even a sign that a's exists
		AssertNotFound(t, l, "", p.ID)
		MustRecord(t, l, b) // other details, yet no conflict: another payment
		Must(t, l.AppendCharge(ctx, a, "ch-a"))
		AssertState(t, l, a.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
		AssertState(t, l, b.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted})
		other := a
		other.AmountCents++
		if _, err := l.RecordPayment(ctx, other); !errors.Is(err, handlers.ErrConflict) {
			t.Errorf("RecordPayment of client-a's id with another amount: err = %v, want ErrConflict", err)
		}
		MustRecord(t, l, p)
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted})
	})

	t.Run("side effects reach their client's payment only", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		a := handlers.Payment{Client: "client-a", ID: p.ID, CustomerID: "cus-a", AmountCents: 100, Currency: "EUR"}
		b := handlers.Payment{Client: "client-b", ID: p.ID, CustomerID: "cus-b", AmountCents: 200, Currency: "USD"}
		Must(t, l.AppendCharge(ctx, a, "ch-a"))
		Must(t, l.AppendNotification(ctx, a, "ch-a"))
		Must(t, l.AppendReceipt(ctx, b, "ch-b"))
		Must(t, l.AppendReceipt(ctx, b, "ch-b"))
		AssertState(t, l, a.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusNotified, Charges: 1, Notifications: 1})
		AssertState(t, l, b.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Receipts: 2})
		AssertNotFound(t, l, "", p.ID)
		// Each was recorded with its own details.
		MustRecord(t, l, a)
		MustRecord(t, l, b)
	})

	t.Run("summary counts the client's payments only", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		a1 := handlers.Payment{Client: "client-a", ID: "pay-1", CustomerID: "cus-a", AmountCents: 100, Currency: "EUR"}
		a2 := handlers.Payment{Client: "client-a", ID: "pay-2", CustomerID: "cus-a", AmountCents: 100, Currency: "EUR"}
		b1 := handlers.Payment{Client: "client-b", ID: "pay-1", CustomerID: "cus-b", AmountCents: 100, Currency: "EUR"}
		Must(t, l.AppendCharge(ctx, a1, "ch-1"))
		Must(t, l.AppendCharge(ctx, a1, "ch-2"))
		Must(t, l.AppendCharge(ctx, a2, "ch-3"))
		Must(t, l.AppendReceipt(ctx, a2, "ch-3"))
		Must(t, l.AppendCharge(ctx, b1, "ch-4"))
		Must(t, l.AppendNotification(ctx, b1, "ch-4"))
		Must(t, l.AppendReceipt(ctx, p, "ch-5"))
		AssertSummary(t, l, "client-a", handlers.Summary{Payments: 2, Charges: 3, Receipts: 1})
		AssertSummary(t, l, "client-b", handlers.Summary{Payments: 1, Charges: 1, Notifications: 1})
		AssertSummary(t, l, "", handlers.Summary{Receipts: 1})
		AssertSummary(t, l, "client-c", handlers.Summary{})
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
			Must(t, err)
		}
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: n})
		AssertSummary(t, l, "", handlers.Summary{Payments: 1, Charges: n})
	})

	runEffectKeys(t, newLedger, p)

	t.Run("cancelled context changes nothing", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		MustRecord(t, l, p)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		q := handlers.Payment{ID: "pay-2", CustomerID: "cus-2", AmountCents: 1, Currency: "USD"}
		calls := map[string]error{
			"AppendCharge":       l.AppendCharge(cancelled, p, "ch-1"),
			"AppendNotification": l.AppendNotification(cancelled, p, "ch-1"),
			"AppendReceipt":      l.AppendReceipt(cancelled, p, "ch-1"),
		}
		_, calls["RecordPayment"] = l.RecordPayment(cancelled, q)
		_, calls["Payment"] = l.Payment(cancelled, p.Client, p.ID)
		_, calls["Summary"] = l.Summary(cancelled, p.Client)
		for name, err := range calls {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: err = %v, want context.Canceled", name, err)
			}
		}
		AssertState(t, l, "", handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusAccepted})
		AssertSummary(t, l, "", handlers.Summary{})
	})
}

// MustRecord records p and returns when it was first accepted.
func MustRecord(t *testing.T, l handlers.Ledger, p handlers.Payment) time.Time {
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

// appendsRows records p, then appends to it twice with appendOnce, checking
// after each call n that l holds the state and summary rows(n) gives: one
// more row each time, the same details notwithstanding.
func appendsRows(t *testing.T, l handlers.Ledger, p handlers.Payment, appendOnce func(handlers.Ledger) error,
	rows func(n int64) (handlers.PaymentState, handlers.Summary)) {
	t.Helper()
	MustRecord(t, l, p)
	for n := int64(1); n <= 2; n++ {
		Must(t, appendOnce(l))
		state, summary := rows(n)
		AssertState(t, l, p.Client, state)
		AssertSummary(t, l, p.Client, summary)
	}
}

// Must fails the test at once if err is not nil.
func Must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// AssertState checks that l holds want for client's payment
// want.PaymentID.
func AssertState(t *testing.T, l handlers.Ledger, client string, want handlers.PaymentState) {
	t.Helper()
	got, err := l.Payment(context.Background(), client, want.PaymentID)
	if err != nil {
		t.Fatalf("Payment(%q, %q): %v", client, want.PaymentID, err)
	}
	if got != want {
		t.Errorf("Payment(%q, %q) = %+v, want %+v", client, want.PaymentID, got, want)
	}
}

// AssertSummary checks that l summarises client's payments to want.
func AssertSummary(t *testing.T, l handlers.Ledger, client string, want handlers.Summary) {
	t.Helper()
	got, err := l.Summary(context.Background(), client)
	if err != nil {
		t.Fatalf("Summary(%q): %v", client, err)
	}
	if got != want {
		t.Errorf("Summary(%q) = %+v, want %+v", client, got, want)
	}
}

// AssertNotFound checks that client has no payment id in l.
func AssertNotFound(t *testing.T, l handlers.Ledger, client, id string) {
	t.Helper()
	if got, err := l.Payment(context.Background(), client, id); !errors.Is(err, handlers.ErrNotFound) {
		t.Errorf("Payment(%q, %q) = %+v, %v; want ErrNotFound", client, id, got, err)
	}
}
