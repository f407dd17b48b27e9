package cache_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/cache"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

const (
	lease = time.Minute
	ttl   = time.Hour
)

var fp = []byte("fingerprint")

// counting is a real store that counts the Claims that reach it.
type counting struct {
	stores.Store
	claims atomic.Int64
}

func (c *counting) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, key, fingerprint, lease)
}

// fixture is a cache over a counting memory store, on a hand-moved clock.
type fixture struct {
	*cache.Store
	next   *counting
	clock  *testenv.Clock
	events []cache.Event
}

func newFixture(t *testing.T, cfg cache.Config) *fixture {
	f := &fixture{next: &counting{Store: newMemory(t)}, clock: testenv.NewClock(time.Now())}
	cfg.Now = f.clock.Now
	cfg.Observer = func(e cache.Event) { f.events = append(f.events, e) }
	f.Store = cache.New(f.next, cfg)
	return f
}

func (f *fixture) claim(t *testing.T, key string, want stores.Status) stores.Claim {
	t.Helper()
	c, err := f.Claim(context.Background(), key, fp, lease)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	if c.Status != want {
		t.Fatalf("Claim(%q) = %v, want %v", key, c.Status, want)
	}
	return c
}

// completed claims and completes key through the cache.
func (f *fixture) completed(t *testing.T, key string, result []byte, ttl time.Duration) stores.Token {
	t.Helper()
	c := f.claim(t, key, stores.Acquired)
	if err := f.Complete(context.Background(), key, c.Token, result, ttl); err != nil {
		t.Fatalf("Complete(%q): %v", key, err)
	}
	return c.Token
}

// wantClaims checks how many Claims reached the wrapped store so far.
func (f *fixture) wantClaims(t *testing.T, want int64) {
	t.Helper()
	if got := f.next.claims.Load(); got != want {
		t.Fatalf("wrapped store saw %d claims, want %d", got, want)
	}
}

func TestCacheHitCostsNoCallToNext(t *testing.T) {
	f := newFixture(t, cache.Config{})
	f.completed(t, "k", []byte("result"), ttl)
	f.wantClaims(t, 1)

	for range 3 {
		c := f.claim(t, "k", stores.Completed)
		if string(c.Record.Result) != "result" || !bytes.Equal(c.Record.Fingerprint, fp) {
			t.Fatalf("cached record = %q/%q, want result/fingerprint", c.Record.Result, c.Record.Fingerprint)
		}
		if c.Record.CompletedAt.IsZero() || c.Record.CreatedAt.After(c.Record.CompletedAt) || c.Token != "" {
			t.Fatalf("cached claim %+v: want CreatedAt <= CompletedAt and no token", c)
		}
		// Callers own what they get: scribbling on it changes no later hit.
		c.Record.Result[0], c.Record.Fingerprint[0] = 'X', 'X'
	}
	f.wantClaims(t, 1)
	if got, want := f.Stats(), (cache.Stats{Hits: 3, Misses: 1}); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
	if len(f.events) != 4 || f.events[0] != cache.Miss || f.events[3] != cache.Hit {
		t.Fatalf("observed %v, want a miss then 3 hits", f.events)
	}
}

func TestCacheFillsFromCompletedClaim(t *testing.T) {
	f := newFixture(t, cache.Config{})
	// Completed behind the cache's back, as another instance would.
	c, err := f.next.Store.Claim(context.Background(), "k", fp, lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.next.Store.Complete(context.Background(), "k", c.Token, []byte("r"), ttl); err != nil {
		t.Fatal(err)
	}
	f.claim(t, "k", stores.Completed) // miss, fills
	f.claim(t, "k", stores.Completed) // hit
	f.wantClaims(t, 1)
}

func TestCacheHonoursExpiresAt(t *testing.T) {
	f := newFixture(t, cache.Config{MaxAge: time.Hour})
	f.completed(t, "k", []byte("r"), 10*time.Second)
	f.clock.Add(9 * time.Second)
	f.claim(t, "k", stores.Completed)
	f.wantClaims(t, 1)

	// The record's TTL has passed by the local clock: the cache no longer
	// answers, whatever the wrapped store still says.
	f.clock.Add(time.Second)
	f.claim(t, "k", stores.Completed)
	f.wantClaims(t, 2)
}

func TestCacheHonoursMaxAge(t *testing.T) {
	f := newFixture(t, cache.Config{MaxAge: 5 * time.Second})
	f.completed(t, "k", []byte("r"), ttl)
	f.clock.Add(4 * time.Second)
	f.claim(t, "k", stores.Completed)
	f.wantClaims(t, 1)

	f.clock.Add(time.Second)
	f.claim(t, "k", stores.Completed) // past MaxAge: asks again, and refills
	f.claim(t, "k", stores.Completed)
	f.wantClaims(t, 2)
}

func TestCacheNeverHoldsInProgress(t *testing.T) {
	f := newFixture(t, cache.Config{})
	owner := f.claim(t, "k", stores.Acquired)
	f.claim(t, "k", stores.InProgress)
	f.claim(t, "k", stores.InProgress)
	f.wantClaims(t, 3)
	if n := f.Len(); n != 0 {
		t.Fatalf("%d records cached while the key is in progress, want 0", n)
	}
	if err := f.Release(context.Background(), "k", owner.Token); err != nil {
		t.Fatal(err)
	}
	f.claim(t, "k", stores.Acquired)
}

func TestCacheInvalidation(t *testing.T) {
	ctx := context.Background()
	for name, drop := range map[string]func(f *fixture, token stores.Token) error{
		"release": func(f *fixture, token stores.Token) error { return f.Release(ctx, "k", stores.NewToken()) },
		"complete lease lost": func(f *fixture, token stores.Token) error {
			return f.Complete(ctx, "k", token, []byte("again"), ttl)
		},
		"extend lease lost": func(f *fixture, token stores.Token) error {
			_, err := f.Extend(ctx, "k", token, lease)
			return err
		},
		"invalidate": func(f *fixture, token stores.Token) error { f.Invalidate("k"); return nil },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, cache.Config{})
			token := f.completed(t, "k", []byte("r"), ttl)
			if err := drop(f, token); name != "invalidate" && !errors.Is(err, stores.ErrLeaseLost) {
				t.Fatalf("error %v, want ErrLeaseLost", err)
			}
			if got := f.Stats().Invalidations; got != 1 {
				t.Fatalf("Invalidations = %d, want 1", got)
			}
			f.claim(t, "k", stores.Completed)
			f.wantClaims(t, 2)
		})
	}
}

func TestCacheSkipsLargeResults(t *testing.T) {
	f := newFixture(t, cache.Config{MaxResultBytes: 16})
	f.completed(t, "fits", bytes.Repeat([]byte("r"), 16), ttl)
	f.completed(t, "large", bytes.Repeat([]byte("r"), 17), ttl)
	f.wantClaims(t, 2)

	f.claim(t, "fits", stores.Completed)
	f.wantClaims(t, 2)
	c := f.claim(t, "large", stores.Completed)
	f.wantClaims(t, 3)
	if len(c.Record.Result) != 17 {
		t.Fatalf("large result has %d bytes, want 17", len(c.Record.Result))
	}
	f.claim(t, "large", stores.Completed) // the Claim did not cache it either
	f.wantClaims(t, 4)
}

func TestCacheSizeBound(t *testing.T) {
	f := newFixture(t, cache.Config{Size: 2})
	for _, k := range []string{"a", "b", "c"} {
		f.completed(t, k, []byte(k), ttl)
	}
	if n := f.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	f.claim(t, "c", stores.Completed)
	f.wantClaims(t, 3)
	f.claim(t, "a", stores.Completed) // the least recently used, pushed out
	f.wantClaims(t, 4)
}

// Another instance's cache keeps answering for a key removed from Redis
// behind its back (an admin evict) for at most MaxAge, then asks Redis.
func TestCacheStalenessBoundAcrossInstances(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.KeyPrefix(t)
	clk := testenv.NewClock(time.Now())
	a := cache.New(testenv.RedisStore(t, rdb, redisstore.Config{KeyPrefix: prefix}), cache.Config{MaxAge: 5 * time.Second, Now: clk.Now})
	ctx := context.Background()
	c, err := a.Claim(ctx, "k", fp, lease)
	if err != nil || c.Status != stores.Acquired {
		t.Fatalf("Claim = %v, %v; want acquired", c.Status, err)
	}
	if err := a.Complete(ctx, "k", c.Token, []byte("r"), ttl); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, prefix+"k").Err(); err != nil {
		t.Fatal(err)
	}

	clk.Add(4 * time.Second)
	if c, err := a.Claim(ctx, "k", fp, lease); err != nil || c.Status != stores.Completed {
		t.Fatalf("within MaxAge: Claim = %v, %v; want the cached completed record", c.Status, err)
	}
	clk.Add(time.Second)
	if c, err := a.Claim(ctx, "k", fp, lease); err != nil || c.Status != stores.Acquired {
		t.Fatalf("after MaxAge: Claim = %v, %v; want acquired from Redis", c.Status, err)
	}
}
