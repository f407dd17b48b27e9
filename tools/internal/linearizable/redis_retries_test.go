package linearizable_test

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/tools/internal/linearizable"
)

// TestLinearizableWithRetries runs the linearizability check on a client
// with go-redis's default retries, as the service's, through a proxy that
// loses replies: it cuts a connection instead of forwarding a reply, after
// the server ran the call. The client resends the call on another
// connection, and the resent call must answer as the first did: a Claim
// its own acquisition, a Complete, Release or Extend its success.
//
// The proxy loses at most one reply per lossGap, so that a call loses at
// most one and its retry follows within go-redis's first backoff (30ms at
// most), while the lease or record the first attempt wrote still lives:
// the store answers a retry as the first attempt only until then. Leases
// are drawn long enough (records live 150ms or more) that a retry
// reconnecting on a machine busy with other suites still finds them.
// Once a record has expired, no store can tell a retried Complete that
// took effect from one whose lease ran out; with DEDUP_TTL in hours and
// retries in milliseconds the service never meets that.
//
// Both what the check needs (an owner's lease that ended) and what this
// test needs (minLost replies lost) are reached whatever the machine's
// pace: the clients call on past Duration until they are, within
// Config.CoverCalls.
func TestLinearizableWithRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) redisstore.Config
	}{
		{"batched", linearizableConfig},
		{"unbatched", func(t *testing.T) redisstore.Config {
			cfg := linearizableConfig(t)
			cfg.Unbatched = true
			return cfg
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Redis(t) // skips the test when Redis is down
			p := lossyProxy(t, testenv.RedisAddr())
			c := redis.NewClient(&redis.Options{Addr: p.addr})
			t.Cleanup(func() { _ = c.Close() })
			linearizable.Run(t, testenv.RedisStore(t, c, tc.cfg(t)), linearizable.Config{
				Duration: 2 * time.Second, MinLease: 300 * time.Millisecond, MaxLease: 600 * time.Millisecond,
				Covered: func() bool { return p.lost.Load() >= minLost },
			})
			n := p.lost.Load()
			t.Logf("%d replies lost", n)
			if n < minLost {
				t.Errorf("%d replies lost, want %d or more for the retries to be checked", n, minLost)
			}
		})
	}
}

// lossGap is the least time between two replies lossyProxy loses: longer
// than go-redis's retries of one call take.
const lossGap = 100 * time.Millisecond

// minLost is how many replies a run must lose for the retries to be
// checked.
const minLost = 5

// lossyProxy forwards loopback connections to target until the test ends,
// and cuts a connection instead of forwarding what the server sent, the
// first time it sends anything lossGap or more after the last cut: the
// server ran the call, its client never hears of it.
func lossyProxy(t *testing.T, target string) *proxy {
	p := &proxy{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64 // when the next reply may be lost, in ns since the epoch
	lose := func() bool {
		now, n := time.Now().UnixNano(), next.Load()
		return now >= n && next.CompareAndSwap(n, now+int64(lossGap))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			cut := func() { _ = client.Close(); _ = server.Close() }
			stop := context.AfterFunc(ctx, cut)
			wg.Go(func() {
				_, _ = io.Copy(server, client)
				cut()
			})
			wg.Go(func() {
				defer stop()
				defer cut()
				buf := make([]byte, 64<<10)
				for {
					n, err := server.Read(buf)
					if err != nil {
						return
					}
					if lose() {
						p.lost.Add(1)
						return
					}
					if _, err := client.Write(buf[:n]); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		cancel()
		wg.Wait()
	})
	p.addr = l.Addr().String()
	return p
}

// proxy is a lossyProxy: its address, and how many replies it lost.
type proxy struct {
	addr string
	lost atomic.Int64
}
