package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/redismeter"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/storetest"
)

// The tests that count round trips set a long BatchTimeout, so that a
// machine slowed by the race detector cannot start extra workers before the
// racing goroutines have queued.

// TestBatchedClaimsTakeFewerRoundTrips races 400 claims (100 keys, 4
// claimers each) on a batching store and checks that they took far fewer
// round trips than calls, with exactly one Acquired per key; then completes
// every key concurrently, batched too.
func TestBatchedClaimsTakeFewerRoundTrips(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	var rt redismeter.Meter
	c.AddHook(&rt)
	var sizes storetest.BatchSizes
	s := redisstore.New(c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: 64, BatchWorkers: 2, BatchTimeout: time.Second,
		BatchObserver: sizes.Observe})
	const keys, claimers = 100, 4

	owners := storetest.RaceClaims(t, s, keys, claimers)
	n := rt.RoundTrips()
	if n > keys*claimers/4 {
		t.Fatalf("%d claims took %d round trips, want at most a quarter", keys*claimers, n)
	}
	// Each batch is one script run, and a round trip more where the
	// script had to be loaded first.
	if batches, calls := sizes.Of("claim"); calls != keys*claimers || batches < 1 || int64(batches) > n {
		t.Fatalf("the observer saw %d claims in %d batches, want %d in at most the %d round trips", calls, batches, keys*claimers, n)
	}

	rt.Reset()
	storetest.RaceCompletes(t, s, owners)
	n = rt.RoundTrips()
	if n >= keys {
		t.Fatalf("%d completes took %d round trips, want fewer", keys, n)
	}
	if batches, calls := sizes.Of("complete"); calls != keys || batches < 1 || int64(batches) > n {
		t.Fatalf("the observer saw %d completes in %d batches, want %d in at most the %d round trips", calls, batches, keys, n)
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
	var rt redismeter.Meter
	c.AddHook(&rt)
	s := redisstore.New(c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Second})
	const keys, claimers = 60, 3
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
	s := redisstore.New(c, redisstore.Config{BatchSize: 64, BatchWorkers: 1})
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

// TestBatchedCallFailsAlone races claims on a single server whose scripts
// were flushed, in batches one script runs whole, with one key holding a
// string instead of a record: that key's claim fails as unavailable, and
// every other claim of its batch acquires its key.
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
	var rt redismeter.Meter
	c.AddHook(&rt)
	s := redisstore.New(c, redisstore.Config{KeyPrefix: prefix, BatchSize: 64, BatchWorkers: 1, BatchTimeout: time.Second})
	const keys = 40
	var wg sync.WaitGroup
	start := make(chan struct{}) // every claim queued at once, not as its goroutine starts
	for i := range keys {
		wg.Go(func() {
			<-start
			key := fmt.Sprint("k", i)
			if i == keys/2 {
				key = "bad"
			}
			cl, err := s.Claim(ctx, key, []byte("fp"), time.Minute)
			var ue *stores.UnavailableError
			switch {
			case key == "bad" && !errors.As(err, &ue):
				t.Errorf("claim of the string key: %v, want an UnavailableError", err)
			case key != "bad" && (err != nil || cl.Status != stores.Acquired):
				t.Errorf("claim of %s = %v, %v; want acquired", key, cl.Status, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := rt.RoundTrips(); n >= keys/2 {
		t.Fatalf("%d claims took %d round trips, want fewer than half", keys, n)
	}
}

// The zero value of Config batches, as the service does; BatchSize 1 or
// Unbatched sends each call alone.
func TestZeroConfigBatches(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		size    int
		batched bool
	}{
		{"zero", 0, true},
		{"unbatched", redisstore.Unbatched, false},
		{"one", 1, false},
	} {
		var sizes storetest.BatchSizes
		s := redisstore.New(c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: tc.size, BatchObserver: sizes.Observe})
		if _, err := s.Claim(ctx, tc.name, []byte("fp"), time.Minute); err != nil {
			t.Fatalf("%s: Claim: %v", tc.name, err)
		}
		if batches, _ := sizes.Of("claim"); (batches > 0) != tc.batched {
			t.Errorf("BatchSize %d: %d claim batches observed, want batching %v", tc.size, batches, tc.batched)
		}
	}
}
