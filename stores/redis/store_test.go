package redisstore_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopRedisCluster()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return newStore(t, testenv.Redis(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				return unreachable(t, redis.NewClient(&redis.Options{
					Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1,
				}))
			},
		})
	})
	t.Run("single node, waiting for a replica", func(t *testing.T) {
		master, _ := replicated(t)
		cfg := func(t *testing.T) redisstore.Config {
			return redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), WaitReplicas: 1, WaitTimeout: 10 * time.Second}
		}
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return testenv.RedisStore(t, master.Client(t), cfg(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				return testenv.RedisStore(t, c, cfg(t))
			},
		})
	})
	t.Run("single node, batched", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return testenv.RedisStore(t, testenv.Redis(t), batched(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				return testenv.RedisStore(t, c, batched(t))
			},
		})
	})
	t.Run("cluster, batched", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return testenv.RedisStore(t, testenv.RedisCluster(t), batched(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				c := redis.NewClusterClient(&redis.ClusterOptions{
					Addrs: []string{testenv.ClosedAddr(t)}, DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1,
				})
				t.Cleanup(func() { _ = c.Close() })
				return testenv.RedisStore(t, c, batched(t))
			},
		})
	})
	t.Run("cluster", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) stores.Store { return newStore(t, testenv.RedisCluster(t)) },
			Unavailable: func(t *testing.T) stores.Store {
				return unreachable(t, redis.NewClusterClient(&redis.ClusterOptions{
					Addrs: []string{testenv.ClosedAddr(t)}, DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1,
				}))
			},
		})
	})
}

// newStore returns a store on c, unbatched, whose keys no other test uses.
func newStore(t *testing.T, c redis.UniversalClient) *redisstore.Store {
	return testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), Unbatched: true})
}

// batched is the configuration of a batching store whose keys no other test
// uses. One worker makes concurrent calls queue, so the suite's concurrent
// cases run in real batches, duplicates of one key included.
func batched(t *testing.T) redisstore.Config {
	return redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), BatchSize: 16, BatchWorkers: 1}
}

// unreachable returns a store on c, a client of a server that is down.
func unreachable(t *testing.T, c redis.UniversalClient) *redisstore.Store {
	t.Cleanup(func() { _ = c.Close() })
	return testenv.RedisStore(t, c, redisstore.Config{Unbatched: true})
}
