package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/redismeter"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/storetest"
)

// The tests that count round trips do not race for batches: a gate holds
// the round trips of the calls that find a worker free until every other
// call has queued behind them, so the batches are the same however loaded
// the machine is. A BatchTimeout of an hour keeps extra workers out.

// TestBatchedClaimsTakeFewerRoundTrips sends 400 claims (100 keys, 4
// claimers each) on a batching store in full batches and checks that they
// took far fewer round trips than calls, with exactly one Acquired per key;
// then completes every key concurrently, batched too.
func TestBatchedClaimsTakeFewerRoundTrips(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	g := &gate{}
	t.Cleanup(g.open)
	c.AddHook(g)
	var rt redismeter.Meter
	c.AddHook(&rt)
	var sizes storetest.BatchSizes
	const keys, claimers, size, workers = 100, 4, 64, 2
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: size, BatchWorkers: workers,
		BatchTimeout: time.Hour, BatchObserver: sizes.Observe})
	// The first two calls take the workers; the rest go in full batches.
	wantBatches := func(calls int) int { return workers + (calls-workers+size-1)/size }

	g.shut()
	g.openWhen(func() bool { return g.held() == workers && s.QueuedClaims() == keys*claimers-workers })
	owners := storetest.RaceClaims(t, s, keys, claimers)
	n := rt.RoundTrips()
	if n > keys*claimers/4 {
		t.Fatalf("%d claims took %d round trips, want at most a quarter", keys*claimers, n)
	}
	// Each batch is one script run, and a round trip more where the
	// script had to be loaded first.
	if batches, calls := sizes.Of("claim"); calls != keys*claimers || batches != wantBatches(calls) || int64(batches) > n {
		t.Fatalf("the observer saw %d claims in %d batches, want %d in %d batches, in at most the %d round trips",
			calls, batches, keys*claimers, wantBatches(keys*claimers), n)
	}

	rt.Reset()
	g.shut()
	g.openWhen(func() bool { return g.held() == workers && s.QueuedCompletes() == keys-workers })
	storetest.RaceCompletes(t, s, owners)
	n = rt.RoundTrips()
	if n >= keys/4 {
		t.Fatalf("%d completes took %d round trips, want fewer than a quarter", keys, n)
	}
	if batches, calls := sizes.Of("complete"); calls != keys || batches != wantBatches(calls) || int64(batches) > n {
		t.Fatalf("the observer saw %d completes in %d batches, want %d in %d batches, in at most the %d round trips",
			calls, batches, keys, wantBatches(keys), n)
	}
	for k := range owners {
		c, err := s.Claim(testCtx(t), k, []byte("fp"), time.Minute)
		if err != nil || c.Status != stores.Completed || string(c.Record.Result) != k {
			t.Fatalf("Claim(%s) after Complete = %v %q, %v", k, c.Status, c.Record.Result, err)
		}
	}
}

// TestBatchedClaimsOnClusterAfterScriptFlush runs batches that span every
// master of a Cluster whose scripts were flushed: the NOSCRIPT replies are
// sent again with EVAL, and every key still has exactly one owner.
func TestBatchedClaimsOnClusterAfterScriptFlush(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	ctx := testCtx(t)
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.ScriptFlush(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	t.Cleanup(g.open)
	c.AddHook(g)
	var rt redismeter.Meter
	c.AddHook(&rt)
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Hour})
	const keys, claimers = 60, 3
	g.shut()
	g.openWhen(func() bool { return g.held() == 1 && s.QueuedClaims() == keys*claimers-1 })
	storetest.RaceClaims(t, s, keys, claimers)
	if n := rt.RoundTrips(); n >= keys*claimers/2 {
		t.Fatalf("%d claims took %d round trips, want fewer than half", keys*claimers, n)
	}
}

// TestBatchedCallsOfAnUnreachableServerAreUnavailable checks that every
// call of a failed pipeline gets its own outage error.
func TestBatchedCallsOfAnUnreachableServerAreUnavailable(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s := testenv.RedisStore(t, c, redisstore.Config{BatchSize: 64, BatchWorkers: 1})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, err := s.Claim(testCtx(t), fmt.Sprint("k", i), nil, time.Minute)
			var ue *stores.UnavailableError
			if !errors.As(err, &ue) {
				t.Errorf("claim %d: %v, want an UnavailableError", i, err)
			}
		})
	}
	wg.Wait()
}

// TestBatchedCallFailsAlone sends claims on a single server whose scripts
// were flushed in one batch that one script runs whole, with one key
// holding a string instead of a record: that key's claim fails as
// unavailable, and every other claim of its batch acquires its key.
func TestBatchedCallFailsAlone(t *testing.T) {
	c := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, prefix+"bad", "not a record", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	t.Cleanup(g.open)
	c.AddHook(g)
	var rt redismeter.Meter
	c.AddHook(&rt)
	var sizes storetest.BatchSizes
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: prefix, BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Hour,
		BatchObserver: sizes.Observe})
	claim := func(key string) {
		cl, err := s.Claim(ctx, key, []byte("fp"), time.Minute)
		var ue *stores.UnavailableError
		switch {
		case key == "bad" && !errors.As(err, &ue):
			t.Errorf("claim of the string key: %v, want an UnavailableError", err)
		case key != "bad" && (err != nil || cl.Status != stores.Acquired):
			t.Errorf("claim of %s = %v, %v; want acquired", key, cl.Status, err)
		}
	}
	const queued = 39
	var wg sync.WaitGroup
	g.shut()
	wg.Go(func() { claim("first") })
	testenv.WaitFor(t, waitQueued, "the first claim to take the worker", func() bool { return g.held() == 1 })
	for i := range queued {
		key := fmt.Sprint("k", i)
		if i == queued/2 {
			key = "bad"
		}
		wg.Go(func() { claim(key) })
	}
	testenv.WaitFor(t, waitQueued, "every claim queued behind the first", func() bool { return s.QueuedClaims() == queued })
	g.open()
	wg.Wait()

	if batches, calls := sizes.Of("claim"); batches != 2 || calls != 1+queued {
		t.Fatalf("the observer saw %d claims in %d batches, want the first alone and %d in one batch", calls, batches, queued)
	}
	// Each batch is one script run, and one more round trip where the
	// script had to be loaded first.
	if n := rt.RoundTrips(); n > 2*2 {
		t.Fatalf("%d claims in 2 batches took %d round trips, want at most 4", 1+queued, n)
	}
}

// waitQueued bounds the wait for calls to queue; reaching it is a failure.
const waitQueued = 10 * time.Second

// gate is a go-redis hook that, while shut, holds every command until it
// is opened. The zero gate is open.
type gate struct {
	mu      sync.Mutex
	closed  chan struct{} // closed by open; nil while open
	holding int           // commands held now
}

// shut makes the commands sent from now on wait for open.
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// open lets the commands held, and every later one, through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// openWhen opens g, in a goroutine of its own, once cond holds, or after
// waitQueued, when the test's own checks tell what went wrong.
func (g *gate) openWhen(cond func() bool) {
	go func() {
		defer g.open()
		for deadline := time.Now().Add(waitQueued); !cond() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}()
}

// held returns how many commands wait at the gate.
func (g *gate) held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding
}

// pass waits while the gate is shut.
func (g *gate) pass() {
	g.mu.Lock()
	closed := g.closed
	if closed != nil {
		g.holding++
	}
	g.mu.Unlock()
	if closed == nil {
		return
	}
	<-closed
	g.mu.Lock()
	g.holding--
	g.mu.Unlock()
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.pass()
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		g.pass()
		return next(ctx, cmds)
	}
}

// The zero value of Config batches, as the service does; BatchSize 1 or
// Unbatched sends each call alone.
func TestZeroConfigBatches(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	ctx := context.Background()
	for _, tc := range []struct {
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
		s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: tc.size, Unbatched: tc.unbatched, BatchObserver: sizes.Observe})
		if _, err := s.Claim(ctx, tc.name, []byte("fp"), time.Minute); err != nil {
			t.Fatalf("%s: Claim: %v", tc.name, err)
		}
		if batches, _ := sizes.Of("claim"); (batches > 0) != tc.batched {
			t.Errorf("%s: %d claim batches observed, want batching %v", tc.name, batches, tc.batched)
		}
	}
}
