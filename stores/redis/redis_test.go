package redisstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestClusterKeepsEachRecordInOneKey runs every operation on keys owned by
// every master and checks that each record is one string at its own key,
// with no other key written: a released key keeps only a released record,
// until the lease it released would have ended.
func TestClusterKeepsEachRecordInOneKey(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: prefix})

	// Claim, extend, then release or complete keys until every master holds
	// two completed records.
	owners := slotOwners(t, c)
	completed := map[string]int{}
	var want, released []string
	for i := 0; len(completed) < 3 || slices.Min(slices.Collect(maps.Values(completed))) < 2; i++ {
		if i == 1000 {
			t.Fatalf("completed records per master: %v", completed)
		}
		k := "key-" + strconv.Itoa(i)
		claim, err := s.Claim(ctx, k, []byte("fp"), time.Minute)
		if err != nil || claim.Status != stores.Acquired {
			t.Fatalf("Claim(%s) = %v, %v", k, claim.Status, err)
		}
		if _, err := s.Extend(ctx, k, claim.Token, time.Minute); err != nil {
			t.Fatalf("Extend(%s): %v", k, err)
		}
		if i%2 == 1 {
			if err := s.Release(ctx, k, claim.Token); err != nil {
				t.Fatalf("Release(%s): %v", k, err)
			}
			released = append(released, prefix+k)
			continue
		}
		if err := s.Complete(ctx, k, claim.Token, []byte(k), time.Minute); err != nil {
			t.Fatalf("Complete(%s): %v", k, err)
		}
		slot, err := c.ClusterKeySlot(ctx, prefix+k).Result()
		if err != nil {
			t.Fatal(err)
		}
		completed[owners[slot]]++
		want = append(want, prefix+k)
	}

	var (
		mu  sync.Mutex
		got []string
	)
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, prefix+"*").Result()
		for _, k := range keys {
			if typ := n.Type(ctx, k).Val(); typ != "string" {
				return fmt.Errorf("key %s is a %s, want a string", k, typ)
			}
			if v := n.Get(ctx, k).Val(); slices.Contains(released, k) && !strings.HasPrefix(v, "1r") {
				return fmt.Errorf("released key %s holds %q, want a released record", k, v)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, keys...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, released...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("keys in the cluster:\n%v\nwant the completed and released records only:\n%v", got, want)
	}
}

// slotOwners maps every slot to the address of the master that serves it.
func slotOwners(t *testing.T, c *redis.ClusterClient) map[int64]string {
	t.Helper()
	shards, err := c.ClusterShards(testCtx(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	owners := make(map[int64]string)
	for _, sh := range shards {
		i := slices.IndexFunc(sh.Nodes, func(n redis.Node) bool { return n.Role == "master" })
		if i < 0 {
			t.Fatalf("shard %v has no master", sh.Slots)
		}
		addr := net.JoinHostPort(sh.Nodes[i].Endpoint, strconv.FormatInt(sh.Nodes[i].Port, 10))
		for _, r := range sh.Slots {
			for slot := r.Start; slot <= r.End; slot++ {
				owners[slot] = addr
			}
		}
	}
	return owners
}

// TestRecordLayout checks the stored value: raw bytes; a claim's times by
// the client's clock as it sent the command, a completed record's by the
// server's; and a key that expires with the lease and then the TTL.
func TestRecordLayout(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: prefix})
	fp := []byte("\x00\xff fp|with|bars")
	const lease = 10 * time.Second

	before := time.Now()
	claim, err := s.Claim(ctx, "k", fp, lease)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if claim.Record.CreatedAt.Before(before.Truncate(time.Microsecond)) || claim.Record.CreatedAt.After(after) {
		t.Fatalf("CreatedAt %v is not between the client's times %v and %v", claim.Record.CreatedAt, before, after)
	}
	if d := claim.LeaseUntil.Sub(claim.Record.CreatedAt); d != lease {
		t.Fatalf("LeaseUntil - CreatedAt = %v, want %v", d, lease)
	}
	wantValue(t, c, prefix+"k", "1pk|"+string(claim.Token)+"|"+micros(claim.Record.CreatedAt)+"|"+micros(claim.LeaseUntil)+
		"||||"+strconv.Itoa(len(fp))+"|"+string(fp))
	wantPTTL(t, c, prefix+"k", lease)

	result := make([]byte, 1<<20)
	_, _ = rand.Read(result)
	serverBefore := c.Time(ctx).Val()
	if err := s.Complete(ctx, "k", claim.Token, result, time.Hour); err != nil {
		t.Fatal(err)
	}
	serverAfter := c.Time(ctx).Val()
	done, err := s.Claim(ctx, "k", nil, lease)
	if err != nil || done.Status != stores.Completed {
		t.Fatalf("Claim after Complete = %v, %v", done.Status, err)
	}
	if at := done.Record.CompletedAt; at.Before(serverBefore) || at.After(serverAfter) {
		t.Fatalf("CompletedAt %v is not between the server's times %v and %v", at, serverBefore, serverAfter)
	}
	if d := done.Record.ExpiresAt.Sub(done.Record.CompletedAt); d != time.Hour {
		t.Fatalf("ExpiresAt - CompletedAt = %v, want 1h", d)
	}
	wantValue(t, c, prefix+"k", "1ck|"+string(claim.Token)+"|"+micros(claim.Record.CreatedAt)+"|"+micros(done.Record.CompletedAt)+
		"|"+micros(done.Record.ExpiresAt)+"|||"+strconv.Itoa(len(fp))+"|"+string(fp)+string(result))
	wantPTTL(t, c, prefix+"k", time.Hour)
}

func wantValue(t *testing.T, c *redis.Client, key, want string) {
	t.Helper()
	got, err := c.Get(testCtx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("record = %d bytes %.80q, want %d bytes %.80q", len(got), got, len(want), want)
	}
}

// wantPTTL checks that key expires within d, and not much sooner.
func wantPTTL(t *testing.T, c *redis.Client, key string, d time.Duration) {
	t.Helper()
	ttl, err := c.PTTL(testCtx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl > d+time.Millisecond || ttl < d-2*time.Second {
		t.Fatalf("PTTL %s = %v, want about %v", key, ttl, d)
	}
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// TestScriptsSurviveScriptFlush checks the EVAL fallback: after the servers
// forget the scripts (SCRIPT FLUSH, a restart, a failover) every operation
// still works.
func TestScriptsSurviveScriptFlush(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	ctx := testCtx(t)
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t)})
	flush := func() {
		t.Helper()
		if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.ScriptFlush(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
	}

	flush()
	a, err := s.Claim(ctx, "a", nil, time.Minute)
	if err != nil || a.Status != stores.Acquired {
		t.Fatalf("Claim = %v, %v", a.Status, err)
	}
	flush()
	if _, err := s.Extend(ctx, "a", a.Token, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	flush()
	if err := s.Complete(ctx, "a", a.Token, []byte("r"), time.Minute); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	b, err := s.Claim(ctx, "b", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	flush()
	if err := s.Release(ctx, "b", b.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// TestDeadlineIsNotUnavailable: a server that does not answer in time makes
// the call fail with the context's error, which is the caller's doing, not
// an outage.
func TestDeadlineIsNotUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	go func() { // accept connections and never answer
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: l.Addr().String(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s := testenv.RedisStore(t, c, redisstore.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = s.Claim(ctx, "k", nil, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Claim past its deadline: %v, want context.DeadlineExceeded and not ErrUnavailable", err)
	}
}

// TestClosedClientIsClosed: a store whose client was closed reports
// ErrClosed, as an outage.
func TestClosedClientIsClosed(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()})
	_ = c.Close()
	s := testenv.RedisStore(t, c, redisstore.Config{})
	err := s.Release(testCtx(t), "k", stores.NewToken())
	if !errors.Is(err, stores.ErrClosed) || !errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Release on a closed client: %v, want ErrClosed and ErrUnavailable", err)
	}
}
