package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// A "{" in a key never reaches the Redis key: on a Cluster, the text
// between it and the next "}" would pick the slot, so that whoever sends
// the keys (a client's Idempotency-Key, a producer's idempotency_key)
// could put all their records on one shard. Such a key is stored under its
// hash; it still claims, completes and reads back as itself.
func TestKeysWithBracesDoNotPickTheSlot(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	for name, cfg := range map[string]redisstore.Config{
		"unbatched": {KeyPrefix: prefix + "u:", Unbatched: true},
		"batched":   {KeyPrefix: prefix + "b:", BatchSize: 16},
	} {
		t.Run(name, func(t *testing.T) {
			s := testenv.RedisStore(t, c, cfg)
			const n = 64
			for i := range n {
				k := "http:client-a:{same-slot}-" + strconv.Itoa(i)
				completeKey(ctx, t, s, k)
			}
			keys, slots := testenv.ClusterSlots(t, c, cfg.KeyPrefix+"*")
			for _, k := range keys {
				if strings.Contains(k, "{") {
					t.Errorf("Redis key %q holds the client's hash tag", k)
				}
			}
			if len(keys) != n || len(slots) < n/2 {
				t.Errorf("%d keys sharing a hash tag: %d records in %d slots, want them spread", n, len(keys), len(slots))
			}
		})
	}
}

// completeKey claims and completes k on s, and checks that it reads back
// as completed, under its own name.
func completeKey(ctx context.Context, t *testing.T, s *redisstore.Store, k string) {
	t.Helper()
	claim, err := s.Claim(ctx, k, []byte("fp"), time.Minute)
	if err != nil || claim.Status != stores.Acquired {
		t.Fatalf("Claim(%s) = %v, %v", k, claim.Status, err)
	}
	if err := s.Complete(ctx, k, claim.Token, []byte("r"), time.Minute); err != nil {
		t.Fatalf("Complete(%s): %v", k, err)
	}
	if again, err := s.Claim(ctx, k, []byte("fp"), time.Minute); err != nil || again.Status != stores.Completed {
		t.Fatalf("Claim(%s) again = %v, %v; want completed", k, again.Status, err)
	}
	if e, err := s.Lookup(ctx, k); err != nil || e.Status != stores.Completed {
		t.Fatalf("Lookup(%s) = %v, %v; want completed", k, e.Status, err)
	}
}
