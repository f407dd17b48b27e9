package postgres_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// inOneBatch runs calls concurrently on a batching store with one worker
// while that worker is held by a claim waiting on a row an open transaction
// locks, so that all of them queue and go out together in one batch (or
// rounds of one, for duplicates) when the transaction commits.
func inOneBatch(t *testing.T, pool *pgxpool.Pool, batched *postgres.Store, plain *postgres.Store, calls []func()) {
	t.Helper()
	ctx := batchCtx(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if c, err := plain.With(tx).Claim(ctx, "blocker", nil, time.Minute); err != nil || c.Status != stores.Acquired {
		t.Fatalf("Claim(blocker) in a transaction = %v, %v", c.Status, err)
	}
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		_, _ = batched.Claim(ctx, "blocker", nil, time.Minute) // waits for the commit
	}()
	time.Sleep(100 * time.Millisecond) // let it take the only worker
	var wg sync.WaitGroup
	for _, call := range calls {
		wg.Go(call)
	}
	time.Sleep(100 * time.Millisecond) // let every call queue
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-blocked
	wg.Wait()
}

// TestBatchedClaimAnswersAsUnbatched claims keys in every state in one
// batch and checks each answer against an unbatched Claim made just after:
// the same record, byte for byte and to the microsecond.
func TestBatchedClaimAnswersAsUnbatched(t *testing.T) {
	t.Parallel()
	pool := testenv.MigratedPostgres(t)
	plain := mustNew(t, pool, unbatched)
	batched := mustNew(t, pool, postgres.Config{BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Minute})
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
	inOneBatch(t, pool, batched, plain, calls)

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
	batched := mustNew(t, pool, postgres.Config{BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Minute})
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
	inOneBatch(t, pool, batched, plain, calls)

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
