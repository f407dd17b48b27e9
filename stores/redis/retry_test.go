package redisstore_test

import (
	"context"
	"io"
	"maps"
	"net"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/redis/internal/redisscript"
	"github.com/onceflow/onceflow/stores/storetest/linearizable"
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
func TestLinearizableWithRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) redisstore.Config
	}{
		{"batched", linearizableConfig},
		{"unbatched", func(t *testing.T) redisstore.Config {
			cfg := linearizableConfig(t)
			cfg.BatchSize = redisstore.Unbatched
			return cfg
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Redis(t) // skips the test when Redis is down
			p := lossyProxy(t, testenv.RedisAddr())
			c := redis.NewClient(&redis.Options{Addr: p.addr})
			t.Cleanup(func() { _ = c.Close() })
			linearizable.Run(t, redisstore.New(c, tc.cfg(t)), linearizable.Config{
				Duration: 2 * time.Second, MinLease: 300 * time.Millisecond, MaxLease: 600 * time.Millisecond,
			})
			n := p.lost.Load()
			t.Logf("%d replies lost", n)
			if n < 5 {
				t.Errorf("%d replies lost, want 5 or more for the retries to be checked", n)
			}
		})
	}
}

// lossGap is the least time between two replies lossyProxy loses: longer
// than go-redis's retries of one call take.
const lossGap = 100 * time.Millisecond

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

// TestScriptsAnswerTheirResend runs each of the store's writing scripts
// twice with the same arguments, as a client resends a call whose reply
// it lost, and checks that the second run answers as the first and
// changes nothing, while a new call with the same token gets the answer
// it always got.
func TestScriptsAnswerTheirResend(t *testing.T) {
	client := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	eval := func(script, key string, args ...any) any {
		t.Helper()
		reply, err := client.Eval(ctx, script, []string{prefix + key}, args...).Result()
		if err != nil {
			t.Fatalf("script on %s: %v", key, err)
		}
		return reply
	}
	twice := func(what, script, key string, args ...any) any {
		t.Helper()
		first := eval(script, key, args...)
		before := client.HGetAll(ctx, prefix+key).Val()
		time.Sleep(2 * time.Millisecond) // the server's clock moves on
		if again := eval(script, key, args...); !reflect.DeepEqual(again, first) {
			t.Errorf("%s run again = %v, want %v", what, again, first)
		}
		if after := client.HGetAll(ctx, prefix+key).Val(); !maps.Equal(after, before) {
			t.Errorf("%s run again changed the record from %v to %v", what, before, after)
		}
		return first
	}
	const minute = 60_000_000 // µs

	claimed := twice("Claim", redisscript.ClaimOne, "k", "tok-1", "fp", minute)
	if claimed.([]any)[0] != "acquired" {
		t.Fatalf("Claim = %v, want acquired", claimed)
	}
	until := twice("Extend", redisscript.Extend, "k", "tok-1", 2*minute, "extend-1")
	if later := eval(redisscript.Extend, "k", "tok-1", 2*minute, "extend-2"); later.(int64) <= until.(int64) {
		t.Errorf("a second Extend moved the lease end from %v to %v, want later", until, later)
	}
	if done := twice("Complete", redisscript.CompleteOne, "k", "tok-1", "result", minute); done != int64(1) {
		t.Fatalf("Complete = %v, want 1", done)
	}
	if other := eval(redisscript.CompleteOne, "k", "tok-1", "other result", minute); other != int64(0) {
		t.Errorf("Complete with another result = %v, want 0", other)
	}
	if f := client.HKeys(ctx, prefix+"k").Val(); slices.Contains(f, "extend_id") {
		t.Errorf("completed record has fields %v, want no extend_id", f)
	}

	eval(redisscript.ClaimOne, "r", "tok-2", "fp", minute)
	if released := twice("Release", redisscript.Release, "r", "tok-2", "release-1"); released != int64(1) {
		t.Fatalf("Release = %v, want 1", released)
	}
	if again := eval(redisscript.Release, "r", "tok-2", "release-2"); again != int64(0) {
		t.Errorf("a second Release = %v, want 0", again)
	}
	// The key is claimed anew, and completed, before the Release is
	// resent: the new owner's record still knows it.
	eval(redisscript.ClaimOne, "r", "tok-3", "fp", minute)
	if again := eval(redisscript.Release, "r", "tok-2", "release-1"); again != int64(1) {
		t.Errorf("Release resent after the key was claimed anew = %v, want 1", again)
	}
	eval(redisscript.CompleteOne, "r", "tok-3", "result", minute)
	if again := eval(redisscript.Release, "r", "tok-2", "release-1"); again != int64(1) {
		t.Errorf("Release resent after the key was completed anew = %v, want 1", again)
	}
	if state := client.HGet(ctx, prefix+"r", "state").Val(); state != "completed" {
		t.Errorf("state after the resent Releases = %q, want completed", state)
	}

	// What a Release leaves lasts as long as the lease it released.
	eval(redisscript.ClaimOne, "short", "tok-4", "fp", 50_000)
	eval(redisscript.Release, "short", "tok-4", "release-3")
	time.Sleep(60 * time.Millisecond)
	if again := eval(redisscript.Release, "short", "tok-4", "release-3"); again != int64(0) {
		t.Errorf("Release resent after its lease would have ended = %v, want 0", again)
	}
	if n := client.Exists(ctx, prefix+"short").Val(); n != 0 {
		t.Errorf("released key still exists after its lease would have ended")
	}
}
