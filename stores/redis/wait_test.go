package redisstore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// replicated starts a master and one replica of it in sync.
func replicated(t *testing.T) (master, replica *testenv.RedisProcess) {
	t.Helper()
	master = testenv.RedisServer(t, "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0")
	return master, testenv.RedisReplica(t, master, "--save", "", "--appendonly", "no")
}

// TestWaitReplicas: with WaitReplicas, Complete returns once the replica
// holds the record, and fails as unavailable, within the timeout, when too
// few replicas acknowledge; the record is on the master all the same.
func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	master, replica := replicated(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	mc, rc := master.Client(t), replica.Client(t)
	newStore := func(replicas int, timeout time.Duration) *redisstore.Store {
		return testenv.RedisStore(t, mc, redisstore.Config{KeyPrefix: prefix, WaitReplicas: replicas, WaitTimeout: timeout})
	}
	claim := func(s *redisstore.Store, k string) stores.Token {
		t.Helper()
		c, err := s.Claim(ctx, k, []byte("fp"), time.Minute)
		if err != nil || c.Status != stores.Acquired {
			t.Fatalf("Claim(%s) = %v, %v", k, c.Status, err)
		}
		return c.Token
	}
	wantCompletedOnMaster := func(s *redisstore.Store, k string) {
		t.Helper()
		if c, err := s.Claim(ctx, k, []byte("fp"), time.Minute); err != nil || c.Status != stores.Completed {
			t.Fatalf("Claim(%s) after Complete = %v, %v; want completed on the master", k, c.Status, err)
		}
	}

	t.Run("acknowledged", func(t *testing.T) {
		s := newStore(1, 10*time.Second)
		if err := s.Complete(ctx, "a", claim(s, "a"), []byte("r"), time.Minute); err != nil {
			t.Fatalf("Complete with one replica in sync: %v", err)
		}
		// WAIT returned, so the replica has applied the write.
		if got := rc.Get(ctx, prefix+"a").Val(); !strings.HasPrefix(got, "1c") {
			t.Fatalf("record on the replica = %q, want a completed one", got)
		}
	})
	t.Run("lease lost is not a replication failure", func(t *testing.T) {
		s := newStore(2, 100*time.Millisecond)
		err := s.Complete(ctx, "lost", stores.NewToken(), []byte("r"), time.Minute)
		if !errors.Is(err, stores.ErrLeaseLost) {
			t.Fatalf("Complete with a stranger's token: %v, want ErrLeaseLost", err)
		}
	})
	for _, tc := range []struct {
		name     string
		replicas int
		stop     bool
	}{{"more replicas than exist", 2, false}, {"replica stopped", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.stop {
				replica.Stop()
			}
			const timeout = 300 * time.Millisecond
			s := newStore(tc.replicas, timeout)
			k := "short-" + strconv.Itoa(tc.replicas)
			token := claim(s, k)
			start := time.Now()
			err := s.Complete(ctx, k, token, []byte("r"), time.Minute)
			took := time.Since(start)
			if !errors.Is(err, stores.ErrUnavailable) || !errors.Is(err, redisstore.ErrNotReplicated) {
				t.Fatalf("Complete: %v, want ErrUnavailable and ErrNotReplicated", err)
			}
			if took < timeout || took > timeout+10*time.Second {
				t.Errorf("Complete failed after %v, want after the %v timeout", took, timeout)
			}
			wantCompletedOnMaster(s, k)
		})
	}
}

// TestWaitReplicasOnCluster: the pipeline of script and WAIT goes to the
// master of each key. The test cluster has no replicas, so every WAIT falls
// short; a wrong node would answer MOVED instead.
func TestWaitReplicasOnCluster(t *testing.T) {
	t.Parallel()
	c := testenv.RedisCluster(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: prefix, WaitReplicas: 1, WaitTimeout: 10 * time.Millisecond})
	owners := slotOwners(t, c)
	seen := map[string]bool{}
	for i := 0; len(seen) < 3; i++ {
		if i == 1000 {
			t.Fatalf("masters reached: %v", seen)
		}
		k := "key-" + strconv.Itoa(i)
		claim, err := s.Claim(ctx, k, nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Complete(ctx, k, claim.Token, []byte("r"), time.Minute)
		if !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("Complete(%s): %v, want ErrNotReplicated", k, err)
		}
		if again, err := s.Claim(ctx, k, nil, time.Minute); err != nil || again.Status != stores.Completed {
			t.Fatalf("Claim(%s) after Complete = %v, %v; want completed", k, again.Status, err)
		}
		slot := c.ClusterKeySlot(ctx, prefix+k).Val()
		seen[owners[slot]] = true
	}
}

// TestWaitReplicasAfterScriptFlush: a master that forgot the script gets it
// again, still in one pipeline with the WAIT.
func TestWaitReplicasAfterScriptFlush(t *testing.T) {
	t.Parallel()
	master, _ := replicated(t)
	ctx := testCtx(t)
	mc := master.Client(t)
	s := testenv.RedisStore(t, mc, redisstore.Config{KeyPrefix: testenv.KeyPrefix(t), WaitReplicas: 1, WaitTimeout: 10 * time.Second})
	claim, err := s.Claim(ctx, "k", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "k", claim.Token, []byte("r"), time.Minute); err != nil {
		t.Fatalf("Complete after SCRIPT FLUSH: %v", err)
	}
}
