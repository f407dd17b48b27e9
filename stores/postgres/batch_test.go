package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/stores/storetest"
)

// statements counts the statements a pool sends: one round trip each.
type statements struct{ n atomic.Int64 }

func (c *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// tracedStore returns a batching store on a fresh schema whose pool counts
// its statements, and the sizes of its batches. A long BatchTimeout keeps a
// machine slowed by the race detector from starting extra workers before
// the racing goroutines queue.
func tracedStore(t *testing.T) (*postgres.Store, *statements, *storetest.BatchSizes) {
	t.Helper()
	counter, sizes := &statements{}, &storetest.BatchSizes{}
	pool := smallPool(t, 4, counter)
	s := mustNew(t, pool, postgres.Config{BatchSize: 64, BatchWorkers: 2, BatchTimeout: time.Second, BatchObserver: sizes.Observe})
	return s, counter, sizes
}

func batchCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestBatchedClaimsTakeFewerStatements races 400 claims (100 keys, 4
// claimers each) and checks that they took far fewer statements than
// calls, with exactly one Acquired per key; then completes every key
// concurrently, batched too, and reads the results back.
func TestBatchedClaimsTakeFewerStatements(t *testing.T) {
	t.Parallel()
	s, counter, sizes := tracedStore(t)
	const keys, claimers = 100, 4

	owners := storetest.RaceClaims(t, s, keys, claimers)
	n := counter.n.Load()
	if n > keys*claimers/4 {
		t.Fatalf("%d claims took %d statements, want at most a quarter", keys*claimers, n)
	}
	// A batch is one statement per round of distinct keys.
	if batches, calls := sizes.Of("claim"); calls != keys*claimers || batches < 1 || int64(batches) > n {
		t.Fatalf("the observer saw %d claims in %d batches, want %d in at most the %d statements", calls, batches, keys*claimers, n)
	}

	counter.n.Store(0)
	storetest.RaceCompletes(t, s, owners)
	n = counter.n.Load()
	if n >= keys/2 {
		t.Fatalf("%d completes took %d statements, want fewer than half", keys, n)
	}
	if batches, calls := sizes.Of("complete"); calls != keys || batches < 1 || int64(batches) > n {
		t.Fatalf("the observer saw %d completes in %d batches, want %d in at most the %d statements", calls, batches, keys, n)
	}
	for k := range owners {
		c, err := s.Claim(batchCtx(t), k, []byte("fp"), time.Minute)
		if err != nil || c.Status != stores.Completed || string(c.Record.Result) != k {
			t.Fatalf("Claim(%s) after Complete = %v %q, %v", k, c.Status, c.Record.Result, err)
		}
	}
}

// TestBatchedCompleteOfALostLeaseIsLeaseLost mixes owners and strangers in
// concurrent Completes: each gets its own answer.
func TestBatchedCompleteOfALostLeaseIsLeaseLost(t *testing.T) {
	t.Parallel()
	s, _, _ := tracedStore(t)
	const keys = 60
	tokens := make([]stores.Token, keys)
	for i := range keys {
		c, err := s.Claim(batchCtx(t), fmt.Sprint("k", i), nil, time.Minute)
		if err != nil || c.Status != stores.Acquired {
			t.Fatalf("Claim = %v, %v", c.Status, err)
		}
		tokens[i] = c.Token
		if i%3 == 0 {
			tokens[i] = stores.NewToken()
		}
	}
	errs := make([]error, keys)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { errs[i] = s.Complete(batchCtx(t), fmt.Sprint("k", i), tokens[i], nil, time.Minute) })
	}
	wg.Wait()
	for i, err := range errs {
		if lost := i%3 == 0; lost != (err != nil) || (lost && !errors.Is(err, stores.ErrLeaseLost)) {
			t.Fatalf("Complete %d (stranger %v): %v", i, lost, err)
		}
	}
}

// smallPool returns a pool of at most conns connections, traced by tracer
// when it is not nil, on a freshly migrated schema: the PostgreSQL that the
// tests share has a limited number of connections.
func smallPool(t *testing.T, conns int32, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	return smallPoolOn(t, testenv.MigratedPostgres(t), conns, tracer)
}

// smallPoolOn is smallPool on pool's database and schema.
func smallPoolOn(t *testing.T, pool *pgxpool.Pool, conns int32, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.MaxConns = conns
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	small, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(small.Close)
	return small
}

// The zero value of Config batches, as the service does; BatchSize 1 or
// Unbatched runs each call alone.
func TestZeroConfigBatches(t *testing.T) {
	t.Parallel()
	pool := testenv.MigratedPostgres(t)
	ctx := batchCtx(t)
	for _, c := range []struct {
		name      string
		size      int
		unbatched bool
		batched   bool
	}{
		{"zero", 0, false, true},
		{"unbatched", 0, true, false},
		{"one", 1, false, false},
	} {
		var sizes storetest.BatchSizes
		s := mustNew(t, pool, postgres.Config{BatchSize: c.size, Unbatched: c.unbatched, BatchObserver: sizes.Observe})
		if _, err := s.Claim(ctx, c.name, []byte("fp"), time.Minute); err != nil {
			t.Fatalf("%s: Claim: %v", c.name, err)
		}
		if batches, _ := sizes.Of("claim"); (batches > 0) != c.batched {
			t.Errorf("%s: %d claim batches observed, want batching %v", c.name, batches, c.batched)
		}
	}
}
