package linearizable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/tools/internal/linearizable"
)

// TestLinearizableRedis checks that the histories of clients racing on a few
// keys fit the store contract's model (package linearizable): on a node of
// the test's own, batched as the service runs the store, while it is
// killed and restarted on its append-only file; and on the Cluster. The
// long variant (LINEARIZABILITY=long) adds unbatched stores and a Cluster
// whose masters fail over to their replicas.
func TestLinearizableRedis(t *testing.T) {
	t.Run("node restarted", func(t *testing.T) {
		srv := testenv.RedisServer(t, "--appendonly", "yes", "--appendfsync", "always")
		linearizable.Run(t, testenv.RedisStore(t, noRetries(t, srv.Addr()), linearizableConfig(t)), linearizable.Config{
			Duration: faultRun(), Outlive: outlive, NotSent: linearizable.DialFailed,
			Faults: []linearizable.Fault{restarted(srv)},
		})
	})
	t.Run("cluster", func(t *testing.T) {
		linearizable.Run(t, testenv.RedisStore(t, testenv.RedisCluster(t), linearizableConfig(t)), linearizable.Config{})
	})
	if !linearizable.Long() {
		return
	}
	t.Run("node unbatched", func(t *testing.T) {
		cfg := linearizableConfig(t)
		cfg.Unbatched = true
		linearizable.Run(t, testenv.RedisStore(t, testenv.Redis(t), cfg), linearizable.Config{})
	})
	t.Run("cluster unbatched", func(t *testing.T) {
		cfg := linearizableConfig(t)
		cfg.Unbatched = true
		linearizable.Run(t, testenv.RedisStore(t, testenv.RedisCluster(t), cfg), linearizable.Config{})
	})
	t.Run("cluster failing over", func(t *testing.T) {
		c := replicatedCluster(t)
		linearizable.Run(t, testenv.RedisStore(t, c.client, linearizableConfig(t)), linearizable.Config{
			Outlive: outlive, Faults: []linearizable.Fault{c.failover()},
		})
	})
}

// linearizableConfig is the service's configuration (batched) on keys of
// the test's own.
func linearizableConfig(t *testing.T) redisstore.Config {
	return redisstore.Config{KeyPrefix: testenv.KeyPrefix(t)}
}

// outlive is the lease or TTL of the records meant to outlive a fault:
// longer than a restart takes.
const outlive = 400 * time.Millisecond

// faultRun is how long a run with faults records: long enough for the
// clients to work before, during and after the first fault.
func faultRun() time.Duration {
	if linearizable.Long() {
		return 0 // the long variant's default
	}
	return 2 * time.Second
}

// noRetries returns a client of addr that never resends a command: a
// command retried after a connection broke may have run twice, and a dial
// error then would not prove that it never ran (linearizable.DialFailed).
// It dials once, so that calls fail while the server is down rather than
// wait for it.
func noRetries(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// restarted kills srv and starts it again on the same files: with SIGKILL
// while clients are paused, so that the calls piling up meanwhile are cut
// off with unknown outcomes, and in the long variant's repeats alternately
// with SHUTDOWN NOSAVE. With appendfsync always every write a client saw
// acknowledged is in the append-only file, so the restarted server must
// hold every record.
func restarted(srv *testenv.RedisProcess) linearizable.Fault {
	n := 0
	f := linearizable.Fault{
		Name:  "redis-server killed (SIGKILL or SHUTDOWN NOSAVE) and restarted on its append-only file",
		Start: 500 * time.Millisecond,
		Inject: func(ctx context.Context) error {
			n++
			c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
			defer c.Close()
			if n%2 == 1 {
				if err := c.ClientPause(ctx, time.Minute).Err(); err != nil {
					return fmt.Errorf("CLIENT PAUSE: %w", err)
				}
				time.Sleep(30 * time.Millisecond)
				srv.Stop()
			} else {
				_ = c.ShutdownNoSave(ctx).Err() // the connection closes instead of a reply
			}
			time.Sleep(150 * time.Millisecond) // down: calls fail meanwhile
			return srv.Restart()
		},
	}
	if linearizable.Long() {
		f.Every = 3 * time.Second
	}
	return f
}
