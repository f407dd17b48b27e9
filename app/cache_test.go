package app

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/stores"
)

// claimCounter is the real store, counting the Claims that reach it.
type claimCounter struct {
	stores.Store
	claims *atomic.Int64
}

func (c claimCounter) Claim(ctx context.Context, key string, fp []byte, lease time.Duration) (stores.Claim, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, key, fp, lease)
}

// A repeated request is answered from the local cache: the lookup counter
// moves, and the store sees no second claim.
func TestDuplicateAnsweredFromCache(t *testing.T) {
	envs := storeEnvs(t)
	for _, name := range []string{"redis", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var claims atomic.Int64
			a := startAppWith(t, seams{store: func(s stores.Store) stores.Store { return claimCounter{s, &claims} }}, envs[name](t)...)
			key, body := uuid.NewString(), flowtest.Body("req-"+uuid.NewString()[:8])

			first := a.send(t, http.DefaultClient, http.MethodPost, flowtest.CreatePath, body, "Idempotency-Key", key)
			if first.status != http.StatusAccepted || first.replayed() {
				t.Fatalf("first POST: %d replayed=%v, want an original 202", first.status, first.replayed())
			}
			waitFor(t, "the request charged, noticed and receipted", func() bool { return flowtest.Tally(t, a) == flowtest.Want(1, 1) })
			// The HTTP face and every route claimed once each; the routes'
			// completions are settled once the ledger shows them.
			before, hits := claims.Load(), a.Metric(t, "onceflow_dedup_cache_lookups_total", "result", "hit")

			again := a.send(t, http.DefaultClient, http.MethodPost, flowtest.CreatePath, body, "Idempotency-Key", key)
			if again.status != http.StatusAccepted || !again.replayed() || string(again.body) != string(first.body) {
				t.Fatalf("second POST: %d replayed=%v %q, want the replay of %q", again.status, again.replayed(), again.body, first.body)
			}
			if got := claims.Load() - before; got != 0 {
				t.Errorf("the store saw %d claims for the duplicate, want 0", got)
			}
			if got := a.Metric(t, "onceflow_dedup_cache_lookups_total", "result", "hit") - hits; got != 1 {
				t.Errorf("cache hits for the duplicate = %v, want 1", got)
			}
			if n := a.Metric(t, "onceflow_dedup_cache_lookups_total", "result", "miss"); n < 1 {
				t.Errorf("cache misses = %v, want the first request's", n)
			}
		})
	}
}

func TestCacheConfig(t *testing.T) {
	cfg, err := LoadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DedupCacheSize != 10_000 || cfg.DedupCacheMaxAge != 30*time.Second {
		t.Fatalf("defaults: DEDUP_CACHE_SIZE=%d DEDUP_CACHE_MAX_AGE=%v, want 10000 and 30s", cfg.DedupCacheSize, cfg.DedupCacheMaxAge)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"DEDUP_CACHE_SIZE=-1"}, `DEDUP_CACHE_SIZE=-1 must be zero (no cache) or more`},
		{[]string{"DEDUP_CACHE_SIZE=big"}, `DEDUP_CACHE_SIZE: strconv.ParseInt`},
		{[]string{"DEDUP_CACHE_MAX_AGE=0s"}, `DEDUP_CACHE_MAX_AGE=0s must be a positive duration`},
		{[]string{"DEDUP_CACHE_MAX_AGE=soon"}, `DEDUP_CACHE_MAX_AGE: unable to parse duration`},
	} {
		if _, err := LoadConfig(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadConfig(%v) error = %v, want it to contain %q", tc.env, err, tc.want)
		}
	}

	pg := []string{"STORE=postgres", "DATABASE_URL=postgres://db/app"}
	for _, tc := range []struct {
		env  []string
		want bool
	}{
		{[]string{"STORE=redis", "REDIS_URL=redis://r:6379/0"}, true},
		{pg, true},
		{append(pg, "DEDUP_CACHE_SIZE=0"), false},
		{append(pg, "DEDUP_MODE=transaction"), false}, // the claim is part of the transaction
		{[]string{"STORE=memory"}, false},             // already local
	} {
		cfg, err := LoadConfig(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.cached(); got != tc.want {
			t.Errorf("%v: cached = %v, want %v", tc.env, got, tc.want)
		}
	}
}
