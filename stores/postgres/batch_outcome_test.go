package postgres_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/stores/storetest"
)

// waitQueued bounds the waits of inOneBatch; reaching it is a failure.
const waitQueued = 10 * time.Second

// oneWorker returns a batching store on pool with one worker per batcher
// and no extra one (BatchTimeout is a minute), and the sizes of its
// batches.
func oneWorker(t *testing.T, pool *pgxpool.Pool) (*postgres.Store, *storetest.BatchSizes) {
	t.Helper()
	sizes := &storetest.BatchSizes{}
	s := mustNew(t, pool, postgres.Config{BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Minute, BatchObserver: sizes.Observe})
	return s, sizes
}

// inOneBatch runs calls, each one call of op ("claim" or "complete") on
// batched, a oneWorker store whose batches sizes records, concurrently and
// checks that they went out together in one batch (in rounds of one for
// duplicates). A first call of op takes the only worker and waits on a row
// an open transaction holds; once the server shows it waiting and every
// call has queued behind it, the transaction commits.
func inOneBatch(t *testing.T, pool *pgxpool.Pool, batched, plain *postgres.Store, sizes *storetest.BatchSizes, op string, calls []func()) {
	t.Helper()
	ctx := batchCtx(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var pid int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	hold, queued := holdWorker(t, tx, batched, plain, op)
	held := make(chan struct{})
	go func() {
		defer close(held)
		hold() // waits for the commit
	}()
	testenv.WaitFor(t, waitQueued, "the first "+op+" to wait on the transaction's row", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&n)
		return err == nil && n > 0
	})
	var wg sync.WaitGroup
	for _, call := range calls {
		wg.Go(call)
	}
	testenv.WaitFor(t, waitQueued, "every "+op+" to queue behind the first", func() bool { return queued() == len(calls) })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-held
	wg.Wait()
	if batches, n := sizes.Of(op); batches != 2 || n != 1+len(calls) {
		t.Fatalf("%d calls of %s after the first went out in %d batches of %d calls in all, want one", len(calls), op, batches-1, n-1)
	}
}

// blocker is the key on whose row the first call of inOneBatch waits.
const blocker = "blocker"

// holdWorker makes tx hold blocker's row and returns a call of op on
// batched that waits on it, and how many calls of op queue on batched. A
// Claim waits on a Claim's insert, a Complete on an Extend of the lease it
// completes.
func holdWorker(t *testing.T, tx pgx.Tx, batched, plain *postgres.Store, op string) (hold func(), queued func() int) {
	t.Helper()
	ctx, in := batchCtx(t), plain.With(tx)
	switch op {
	case "claim":
		if c, err := in.Claim(ctx, blocker, nil, time.Minute); err != nil || c.Status != stores.Acquired {
			t.Fatalf("Claim(%s) in a transaction = %v, %v", blocker, c.Status, err)
		}
		return func() { _, _ = batched.Claim(ctx, blocker, nil, time.Minute) }, batched.QueuedClaims
	case "complete":
		c, err := plain.Claim(ctx, blocker, nil, time.Minute)
		if err != nil || c.Status != stores.Acquired {
			t.Fatalf("Claim(%s) = %v, %v", blocker, c.Status, err)
		}
		if _, err := in.Extend(ctx, blocker, c.Token, time.Minute); err != nil {
			t.Fatalf("Extend(%s) in a transaction: %v", blocker, err)
		}
		return func() { _ = batched.Complete(ctx, blocker, c.Token, nil, time.Hour) }, batched.QueuedCompletes
	}
	t.Fatalf("no first call for op %q", op)
	return nil, nil
}

// TestBatchedClaimAnswersAsUnbatched claims keys in every state in one
// batch and checks each answer against an unbatched Claim made just after:
// the same record, byte for byte and to the microsecond.
func TestBatchedClaimAnswersAsUnbatched(t *testing.T) {
	t.Parallel()
	pool := testenv.MigratedPostgres(t)
	plain := mustNew(t, pool, unbatched)
	batched, sizes := oneWorker(t, pool)
	ctx := batchCtx(t)

	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18)
	results := map[string][]byte{"nil": nil, "empty": {}, "binary": {0, 0xff, '\'', '\\'}, "big": big}
	for name, r := range results {
		c, err := plain.Claim(ctx, "completed-"+name, []byte("fp-"+name), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := plain.Complete(ctx, "completed-"+name, c.Token, r, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plain.Claim(ctx, "held", []byte("fp-held"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Claim(ctx, "ended", []byte("fp-old"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)

	keys := []string{"absent", "held", "ended", "completed-nil", "completed-empty", "completed-binary", "completed-big", "absent"}
	got := make([]stores.Claim, len(keys))
	calls := make([]func(), len(keys))
	for i, k := range keys {
		calls[i] = func() {
			var err error
			if got[i], err = batched.Claim(ctx, k, []byte("fp-new"), time.Minute); err != nil {
				t.Errorf("Claim(%s): %v", k, err)
			}
		}
	}
	inOneBatch(t, pool, batched, plain, sizes, "claim", calls)

	acquired := 0
	for i, k := range keys {
		after, err := plain.Claim(ctx, k, []byte("fp-after"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Status == stores.Acquired {
			acquired++
			// The owner's lease is what the next caller sees.
			if after.Status != stores.InProgress || !after.LeaseUntil.Equal(got[i].LeaseUntil) ||
				string(after.Record.Fingerprint) != "fp-new" {
				t.Fatalf("%s: acquired until %v, then seen as %+v", k, got[i].LeaseUntil, after)
			}
			continue
		}
		if !reflect.DeepEqual(got[i], after) {
			t.Fatalf("%s: batched claim %+v, unbatched %+v", k, got[i], after)
		}
	}
	// absent (once of two), ended: acquired; the rest are not.
	if acquired != 2 {
		t.Fatalf("%d keys acquired, want 2 (absent once, ended): %+v", acquired, got)
	}
	if got[0].Status == got[7].Status {
		t.Fatalf("two claims of an absent key in one batch: %v and %v", got[0].Status, got[7].Status)
	}
	if got[3].Record.Result != nil || got[4].Record.Result == nil || !bytes.Equal(got[6].Record.Result, big) {
		t.Fatalf("results changed in a batch: nil %v, empty %v, big %d bytes",
			got[3].Record.Result, got[4].Record.Result, len(got[6].Record.Result))
	}
}

// TestBatchedCompleteStoresAsUnbatched completes keys in one batch, with
// results nil, empty, binary and large, a stranger's token and a key
// completed twice, and reads each back.
func TestBatchedCompleteStoresAsUnbatched(t *testing.T) {
	t.Parallel()
	pool := testenv.MigratedPostgres(t)
	plain := mustNew(t, pool, unbatched)
	batched, sizes := oneWorker(t, pool)
	ctx := batchCtx(t)

	big := bytes.Repeat([]byte{9, 0, 7}, 1<<18)
	results := [][]byte{nil, {}, {0, 0xff, '\\'}, big, []byte("first"), []byte("second"), []byte("stranger")}
	keys := []string{"k-nil", "k-empty", "k-binary", "k-big", "twice", "twice", "stranger"}
	tokens := map[string]stores.Token{}
	for _, k := range keys {
		if _, ok := tokens[k]; ok {
			continue
		}
		c, err := plain.Claim(ctx, k, nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		tokens[k] = c.Token
	}
	errs := make([]error, len(keys))
	calls := make([]func(), len(keys))
	for i, k := range keys {
		token := tokens[k]
		if k == "stranger" {
			token = stores.NewToken()
		}
		calls[i] = func() { errs[i] = batched.Complete(ctx, k, token, results[i], time.Hour) }
	}
	inOneBatch(t, pool, batched, plain, sizes, "complete", calls)

	for i, k := range keys[:4] {
		if errs[i] != nil {
			t.Fatalf("Complete(%s): %v", k, errs[i])
		}
		c, err := plain.Claim(ctx, k, nil, time.Minute)
		if err != nil || c.Status != stores.Completed {
			t.Fatalf("Claim(%s) = %v, %v", k, c.Status, err)
		}
		if (results[i] == nil) != (c.Record.Result == nil) || !bytes.Equal(c.Record.Result, results[i]) {
			t.Fatalf("%s: stored %d bytes (nil %v), want %d (nil %v)", k, len(c.Record.Result), c.Record.Result == nil,
				len(results[i]), results[i] == nil)
		}
	}
	// Two Completes of one key run in turn: one wins, the other finds it
	// completed and has lost the lease.
	if (errs[4] == nil) == (errs[5] == nil) {
		t.Fatalf("completing twice: %v and %v, want exactly one success", errs[4], errs[5])
	}
	if err := fmt.Sprint(errs[6]); errs[6] == nil || !errors.Is(errs[6], stores.ErrLeaseLost) {
		t.Fatalf("a stranger's Complete: %s, want ErrLeaseLost", err)
	}
}
