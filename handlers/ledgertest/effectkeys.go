package ledgertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware/receiver"
	memstore "github.com/onceflow/onceflow/stores/memory"
)

// errAfterEffects fails a run after its appends, as a handler that fails
// after its effect does: the receiver releases the key for the retry.
var errAfterEffects = errors.New("failed after its appends")

// runEffectKeys is the part of the suite about appends in a receiver's
// run: one effect key, one row.
func runEffectKeys(t *testing.T, newLedger func(t *testing.T) handlers.Ledger, p handlers.Payment) {
	t.Helper()
	appendEach := func(ctx context.Context, l handlers.Ledger) error {
		return errors.Join(l.AppendCharge(ctx, p, "ch-1"), l.AppendNotification(ctx, p, "ch-1"), l.AppendReceipt(ctx, p, "ch-1"))
	}

	t.Run("appends under one run's effect key record one row", func(t *testing.T) {
		t.Parallel()
		l, r := newLedger(t), newReceiver(t)
		// Each run appends every kind of row twice; the first then fails
		// and the retry, with the same effect keys, appends them again.
		for attempt := 1; attempt <= 2; attempt++ {
			err := inRun(t, r, "charge_payment", p.IdempotencyKey(), func(ctx context.Context) error {
				if err := errors.Join(appendEach(ctx, l), appendEach(ctx, l)); err != nil {
					return err
				}
				if attempt == 1 {
					return errAfterEffects
				}
				return nil
			})
			if attempt == 1 && !errors.Is(err, errAfterEffects) || attempt == 2 && err != nil {
				t.Fatalf("run %d: %v", attempt, err)
			}
		}
		AssertState(t, l, p.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusNotified, Charges: 1, Notifications: 1, Receipts: 1})
		AssertSummary(t, l, p.Client, handlers.Summary{Payments: 1, Charges: 1, Notifications: 1, Receipts: 1})
	})

	t.Run("appends without a run's effect key record a row each", func(t *testing.T) {
		t.Parallel()
		l, r := newLedger(t), newReceiver(t)
		Must(t, appendEach(context.Background(), l))
		Must(t, appendEach(context.Background(), l))
		Must(t, inRun(t, r, "charge_payment", p.IdempotencyKey(), func(ctx context.Context) error {
			ctx = receiver.WithoutEffectKeys(ctx)
			return errors.Join(appendEach(ctx, l), appendEach(ctx, l))
		}))
		AssertState(t, l, p.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusNotified, Charges: 4, Notifications: 4, Receipts: 4})
	})

	t.Run("appends under different effect keys record a row each", func(t *testing.T) {
		t.Parallel()
		l, r := newLedger(t), newReceiver(t)
		// Two handlers' runs for one message, and one handler's for two.
		for _, run := range []struct{ scope, key string }{
			{"charge_payment", p.IdempotencyKey()},
			{"recharge_payment", p.IdempotencyKey()},
			{"charge_payment", p.IdempotencyKey() + "-again"},
		} {
			Must(t, inRun(t, r, run.scope, run.key, func(ctx context.Context) error { return appendEach(ctx, l) }))
		}
		AssertState(t, l, p.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusNotified, Charges: 3, Notifications: 3, Receipts: 3})
		AssertSummary(t, l, p.Client, handlers.Summary{Payments: 1, Charges: 3, Notifications: 3, Receipts: 3})
	})

	t.Run("concurrent appends under one effect key record one row", func(t *testing.T) {
		t.Parallel()
		l, r := newLedger(t), newReceiver(t)
		// The payment is not recorded first: the appends race to record it
		// and to add the run's row.
		Must(t, inRun(t, r, "charge_payment", p.IdempotencyKey(), func(ctx context.Context) error {
			const n = 20
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() { errs[i] = l.AppendCharge(ctx, p, "ch-1") })
			}
			wg.Wait()
			return errors.Join(errs...)
		}))
		AssertState(t, l, p.Client, handlers.PaymentState{PaymentID: p.ID, Status: handlers.StatusCharged, Charges: 1})
		AssertSummary(t, l, p.Client, handlers.Summary{Payments: 1, Charges: 1})
	})
}

// newReceiver returns a receiver on a store in memory, closed when t ends.
func newReceiver(t *testing.T) *receiver.Receiver {
	t.Helper()
	store := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = store.Close() })
	r, err := receiver.New(receiver.Config{Store: store, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// inRun runs fn as r runs a handler: in the run of handler scope for the
// message key key, whose context carries the run's effect keys. It returns
// the run's error.
func inRun(t *testing.T, r *receiver.Receiver, scope, key string, fn func(ctx context.Context) error) error {
	t.Helper()
	_, err := r.Execute(t.Context(), scope, key, []byte(key), func(ctx context.Context) ([]byte, error) {
		return nil, fn(ctx)
	})
	return err
}
