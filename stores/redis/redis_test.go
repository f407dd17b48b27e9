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
// every master and checks that each record is one hash at its own key, with
// no other key written: a released key keeps only its released field,
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
			if typ := n.Type(ctx, k).Val(); typ != "hash" {
				return fmt.Errorf("key %s is a %s, want a hash", k, typ)
			}
			if fields := n.HKeys(ctx, k).Val(); slices.Contains(released, k) && !slices.Equal(fields, []string{"released"}) {
				return fmt.Errorf("released key %s has fields %v, want only released", k, fields)
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

// TestRecordLayout checks the stored hash: raw bytes, timestamps by the
// server's clock, and a key that expires with the lease and then the TTL.
func TestRecordLayout(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: prefix})
	fp := []byte("\x00\xff fingerprint")
	const lease = 10 * time.Second

	before := c.Time(ctx).Val()
	claim, err := s.Claim(ctx, "k", fp, lease)
	if err != nil {
		t.Fatal(err)
	}
	after := c.Time(ctx).Val()
	if claim.Record.CreatedAt.Before(before) || claim.Record.CreatedAt.After(after) {
		t.Fatalf("CreatedAt %v is not between the server's times %v and %v", claim.Record.CreatedAt, before, after)
	}
	if d := claim.LeaseUntil.Sub(claim.Record.CreatedAt); d != lease {
		t.Fatalf("LeaseUntil - CreatedAt = %v, want %v", d, lease)
	}
	wantHash(t, c, prefix+"k", map[string]string{
		"state":       "in_progress",
		"token":       string(claim.Token),
		"fingerprint": string(fp),
		"created_at":  micros(claim.Record.CreatedAt),
		"lease_until": micros(claim.LeaseUntil),
	})
	wantPTTL(t, c, prefix+"k", lease)

	result := make([]byte, 1<<20)
	_, _ = rand.Read(result)
	if err := s.Complete(ctx, "k", claim.Token, result, time.Hour); err != nil {
		t.Fatal(err)
	}
	done, err := s.Claim(ctx, "k", nil, lease)
	if err != nil || done.Status != stores.Completed {
		t.Fatalf("Claim after Complete = %v, %v", done.Status, err)
	}
	if d := done.Record.ExpiresAt.Sub(done.Record.CompletedAt); d != time.Hour {
		t.Fatalf("ExpiresAt - CompletedAt = %v, want 1h", d)
	}
	wantHash(t, c, prefix+"k", map[string]string{
		"state":        "completed",
		"token":        string(claim.Token),
		"fingerprint":  string(fp),
		"result":       string(result),
		"created_at":   micros(claim.Record.CreatedAt),
		"completed_at": micros(done.Record.CompletedAt),
		"expires_at":   micros(done.Record.ExpiresAt),
	})
	wantPTTL(t, c, prefix+"k", time.Hour)
}

func wantHash(t *testing.T, c *redis.Client, key string, want map[string]string) {
	t.Helper()
	got, err := c.HGetAll(testCtx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	for f := range got {
		if _, ok := want[f]; !ok {
			t.Errorf("record has unexpected field %s", f)
		}
	}
	for f, v := range want {
		if got[f] != v {
			t.Errorf("record field %s = %d bytes %.40q, want %d bytes %.40q", f, len(got[f]), got[f], len(v), v)
		}
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
