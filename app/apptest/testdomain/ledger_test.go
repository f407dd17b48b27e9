package testdomain_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/migrations"
	memstore "github.com/onceflow/onceflow/stores/memory"
)

// Both ledgers pass one suite: the memory one, and the PostgreSQL one in a
// schema of its own, migrated with the domain's migrations.
func TestLedgers(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		ledgerSuite(t, func(*testing.T) testdomain.Ledger { return testdomain.NewMemoryLedger() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		ledgerSuite(t, func(t *testing.T) testdomain.Ledger {
			return testdomain.NewPostgresLedger(testenv.MigratedPostgres(t, migrations.Of(testdomain.Name, testdomain.Migrations())))
		})
	})
}

func ledgerSuite(t *testing.T, newLedger func(*testing.T) testdomain.Ledger) {
	t.Run("rows outside a run add up", func(t *testing.T) {
		t.Parallel()
		l := newLedger(t)
		for _, id := range []string{"a-1", "a-1", "a-2", "b-1"} {
			must(t, l.Add(t.Context(), testdomain.Charges, id))
		}
		must(t, l.Add(t.Context(), testdomain.Notices, "a-1"))
		assertTally(t, l, "", testdomain.Tally{Charges: counts(4, 3), Notices: counts(1, 1)})
		assertTally(t, l, "a-", testdomain.Tally{Charges: counts(3, 2), Notices: counts(1, 1)})
		assertTally(t, l, "c", testdomain.Tally{})
		got, err := l.TallyOf(t.Context(), "a-1")
		if want := (testdomain.Tally{Charges: counts(2, 1), Notices: counts(1, 1)}); err != nil || got != want {
			t.Errorf("TallyOf(a-1) = %+v, %v; want %+v", got, err, want)
		}
	})

	t.Run("a run adds one row of each kind however often it runs", func(t *testing.T) {
		t.Parallel()
		l, r := newLedger(t), newRuns(t)
		addAll := func(ctx context.Context) error {
			var errs []error
			for _, k := range []testdomain.Kind{testdomain.Requests, testdomain.Charges, testdomain.Notices, testdomain.Receipts} {
				errs = append(errs, l.Add(ctx, k, "a-1"), l.Add(ctx, k, "a-1"))
			}
			return errors.Join(errs...)
		}
		// The first run fails after its rows; the retry, under the same
		// effect keys, adds them again.
		errAfterRows := errors.New("failed after its rows")
		if err := r.do("charge", "a-1", func(ctx context.Context) error { return errors.Join(addAll(ctx), errAfterRows) }); !errors.Is(err, errAfterRows) {
			t.Fatalf("first run: %v", err)
		}
		must(t, r.do("charge", "a-1", addAll))
		once := counts(1, 1)
		assertTally(t, l, "", testdomain.Tally{Requests: once, Charges: once, Notices: once, Receipts: once})

		// Another scope's run, another message's, and a run without its
		// keys each add their own.
		must(t, r.do("other", "a-1", func(ctx context.Context) error { return l.Add(ctx, testdomain.Charges, "a-1") }))
		must(t, r.do("charge", "a-1-again", func(ctx context.Context) error { return l.Add(ctx, testdomain.Charges, "a-1") }))
		must(t, r.do("charge", "a-1-without-keys", func(ctx context.Context) error {
			return l.Add(receiver.WithoutEffectKeys(ctx), testdomain.Charges, "a-1")
		}))
		assertTally(t, l, "", testdomain.Tally{Requests: once, Charges: counts(4, 1), Notices: once, Receipts: once})
	})

	t.Run("concurrent adds of one run add one row", func(t *testing.T) {
		t.Parallel()
		l, r := newLedger(t), newRuns(t)
		must(t, r.do("charge", "a-1", func(ctx context.Context) error {
			var wg sync.WaitGroup
			errs := make([]error, 16)
			for i := range errs {
				wg.Go(func() { errs[i] = l.Add(ctx, testdomain.Charges, "a-1") })
			}
			wg.Wait()
			return errors.Join(errs...)
		}))
		assertTally(t, l, "", testdomain.Tally{Charges: counts(1, 1)})
	})

	t.Run("an unknown kind is refused", func(t *testing.T) {
		t.Parallel()
		if err := newLedger(t).Add(t.Context(), "refund", "a-1"); err == nil {
			t.Error("Add of kind refund: no error")
		}
	})
}

func counts(rows, ids int64) testdomain.Counts { return testdomain.Counts{Rows: rows, IDs: ids} }

func assertTally(t *testing.T, l testdomain.Ledger, prefix string, want testdomain.Tally) {
	t.Helper()
	if got, err := l.Tally(t.Context(), prefix); err != nil || got != want {
		t.Errorf("Tally(%q) = %+v, %v; want %+v", prefix, got, err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runs runs functions as a receiver runs handlers, its records in memory.
type runs struct {
	t *testing.T
	r *receiver.Receiver
}

func newRuns(t *testing.T) runs {
	store := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = store.Close() })
	r, err := receiver.New(receiver.Config{Store: store, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return runs{t, r}
}

// do runs fn in the run of the handler scope for the message key: fn's
// context carries the run's effect keys. A completed key runs nothing.
func (rs runs) do(scope, key string, fn func(context.Context) error) error {
	_, err := rs.r.Execute(rs.t.Context(), scope, key, []byte(key), func(ctx context.Context) ([]byte, error) { return nil, fn(ctx) })
	return err
}
