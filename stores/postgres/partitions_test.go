package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// seedPartitioned inserts one completed record per key created at created
// and expiring at expires, as a Claim and Complete at created would have
// left it.
func seedPartitioned(t *testing.T, pool *pgxpool.Pool, created, expires time.Time, keys ...string) {
	t.Helper()
	for _, k := range keys {
		_, err := pool.Exec(testContext(t), `INSERT INTO idempotency_records
			(key, state, token, fingerprint, result, created_at, completed_at, expires_at)
			VALUES ($1, 'completed', 'token', 'fp', 'result', $2, $2, $3)`, k, created, expires)
		if err != nil {
			t.Fatalf("seeding %s: %v", k, err)
		}
	}
}

// TestSweeperDropsExpiredPartitionsOnly: a pass drops the past partitions
// whose records have all expired (empty ones included), keeps the one that
// holds a live record and the current one, creates partitions ahead, and
// reports the records it dropped; the kept records still answer.
func TestSweeperDropsExpiredPartitionsOnly(t *testing.T) {
	t.Parallel()
	s, pool := newPartitionedStore(t)
	ctx := testContext(t)
	now := time.Now()
	if _, err := s.CreatePartitions(ctx, now.Add(-6*time.Hour), now, time.Hour); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	seedPartitioned(t, pool, now.Add(-5*time.Hour), now.Add(-3*time.Hour), "old-1", "old-2", "old-3")
	seedPartitioned(t, pool, now.Add(-4*time.Hour), now.Add(time.Hour), "long-ttl")
	c := wantClaim(t, s, "current", stores.Acquired)
	if err := s.Complete(ctx, "current", c.Token, []byte("r"), time.Hour); err != nil {
		t.Fatal(err)
	}

	w := postgres.NewSweeper(s, postgres.SweeperConfig{PartitionWidth: time.Hour, PartitionsAhead: 2, Grace: time.Minute})
	n, err := w.Pass(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Pass = %d, %v; want the 3 expired records", n, err)
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	covers := func(at time.Time) bool {
		for _, p := range parts {
			if !at.Before(p.From) && at.Before(p.To) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		at   time.Time
		want bool
		what string
	}{
		{now.Add(-5 * time.Hour), false, "the partition of expired records"},
		{now.Add(-2 * time.Hour), false, "an empty past partition"},
		{now.Add(-4 * time.Hour), true, "the partition with a live record"},
		{now, true, "the current partition"},
		{now.Add(2 * time.Hour), true, "a partition ahead"},
	} {
		if covers(c.at) != c.want {
			t.Errorf("after the pass, %s (created_at %s) exists = %v, want %v", c.what, c.at.Format(time.TimeOnly), !c.want, c.want)
		}
	}
	wantClaim(t, s, "long-ttl", stores.Completed)
	wantClaim(t, s, "current", stores.Completed)
	wantClaim(t, s, "old-1", stores.Acquired)
	if n, err := w.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("second Pass = %d, %v; want nothing left to drop", n, err)
	}
	if _, err := s.Sweep(ctx, 10); err == nil {
		t.Error("Sweep on the partitioned layout succeeded; want it refused (rows are dropped by partition)")
	}

	// With no partition for the time, a claim is a store error (the
	// sweeper creates them ahead), never a lost record.
	for _, p := range mustPartitions(t, s) {
		if _, err := pool.Exec(ctx, "DROP TABLE "+p.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, "k", []byte("fp"), time.Minute); !errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Claim with no partition = %v, want a store error", err)
	}
}

func mustPartitions(t *testing.T, s *postgres.Store) []postgres.Partition {
	t.Helper()
	parts, err := s.Partitions(testContext(t))
	if err != nil || len(parts) == 0 {
		t.Fatalf("Partitions = %v, %v; want some", parts, err)
	}
	return parts
}
