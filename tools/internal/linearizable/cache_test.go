package linearizable_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/cache"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/tools/internal/linearizable"
)

// TestLinearizableCache checks that the cache in front of Redis keeps the
// wrapped store linearizable (package linearizable): its answers from
// local copies of completed records must fit the same single record per
// key as the calls that reach Redis. The long variant (LINEARIZABILITY=long)
// also kills and restarts a Redis of the test's own under it.
func TestLinearizableCache(t *testing.T) {
	t.Run("over redis", func(t *testing.T) {
		next := testenv.RedisStore(t, testenv.Redis(t), redisstore.Config{KeyPrefix: testenv.KeyPrefix(t)})
		s := cache.New(next, cache.Config{})
		linearizable.Run(t, s, linearizable.Config{})
		if st := s.Stats(); st.Hits == 0 {
			t.Errorf("cache %+v: no claim was answered from the cache, so the run checked Redis alone", st)
		} else {
			t.Logf("cache %+v", st)
		}
	})
	if !linearizable.Long() {
		return
	}
	t.Run("over a restarted redis", func(t *testing.T) {
		srv := testenv.RedisServer(t, "--appendonly", "yes", "--appendfsync", "always")
		// No retries, and one dial: see linearizable.DialFailed.
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { _ = c.Close() })
		linearizable.Run(t, cache.New(testenv.RedisStore(t, c, redisstore.Config{}), cache.Config{}), linearizable.Config{
			Outlive: 400 * time.Millisecond, NotSent: linearizable.DialFailed,
			Faults: []linearizable.Fault{{
				Name: "redis-server killed (SIGKILL) and restarted on its append-only file", Start: time.Second, Every: 3 * time.Second,
				Inject: func(context.Context) error {
					srv.Stop()
					time.Sleep(150 * time.Millisecond)
					return srv.Restart()
				},
			}},
		})
	})
}
