package cache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/cache"
	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/storetest"
)

// The conformance suite runs against the cache in front of each store, on
// the real backends: caching completed records changes none of the
// contract's outcomes.
func TestCacheConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return cached(newMemory(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				m := memory.New(memory.Config{})
				_ = m.Close()
				return cached(m)
			},
			// The cache keeps only completed records and is free to drop
			// them; the capacity is the wrapped store's.
			Bounded: func(t *testing.T, capacity int) stores.Store {
				m := memory.New(memory.Config{MaxEntries: capacity})
				t.Cleanup(func() { _ = m.Close() })
				return cache.New(m, cache.Config{Size: 1})
			},
		})
	})
	t.Run("redis", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return cached(newRedis(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				c := redis.NewClient(&redis.Options{
					Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1,
				})
				t.Cleanup(func() { _ = c.Close() })
				return cached(testenv.RedisStore(t, c, redisstore.Config{}))
			},
		})
	})
	t.Run("postgres", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return cached(newPostgres(t, testenv.MigratedPostgres(t))) },
			Unavailable: func(t *testing.T) stores.Store {
				pool, err := pgxpool.New(context.Background(),
					fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable&connect_timeout=1", testenv.ClosedAddr(t)))
				if err != nil {
					t.Fatalf("opening pool: %v", err)
				}
				t.Cleanup(pool.Close)
				return cached(newPostgres(t, pool))
			},
		})
	})
}

func cached(next stores.Store) *cache.Store { return cache.New(next, cache.Config{}) }

func newMemory(t testing.TB) *memory.Store {
	m := memory.New(memory.Config{})
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// newRedis returns a Redis store whose keys no other test uses.
func newRedis(t testing.TB) *redisstore.Store {
	return testenv.RedisStore(t, testenv.Redis(t), redisstore.Config{KeyPrefix: testenv.KeyPrefix(t)})
}

func newPostgres(t testing.TB, pool *pgxpool.Pool) *postgres.Store {
	t.Helper()
	s, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatalf("postgres store: %v", err)
	}
	return s
}
