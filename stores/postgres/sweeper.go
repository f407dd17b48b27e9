package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSweepBatch is the most records one sweep statement deletes unless
// SweeperConfig.Batch says otherwise.
const DefaultSweepBatch = 1000

// sweepSQL deletes up to $2 expired records whose expiry is at or after $1,
// oldest first, and returns how many it deleted and the latest expiry among
// them (NULL when none).
//
// Expired records are already absent as far as the contract goes (Claim takes
// them over, Complete, Release and Extend refuse them), so deleting one
// changes no outcome; it only reclaims space. An in-progress record whose
// lease ended goes too: its owner can no longer complete it.
//
// The lower bound $1 is the cursor of a pass: each batch starts where the
// previous one stopped on the expires_at index, instead of walking again over
// the index entries of the rows it has just deleted, which stay in the index
// until vacuum and would make a pass over n rows cost O(n²) index reads. It
// is inclusive so that records sharing one expiry (rows written in one
// transaction share now()) are never skipped when a batch ends among them.
//
// Rows are deleted by ctid, the physical address the inner scan found, so the
// delete needs no second index lookup. FOR UPDATE keeps every selected row,
// and so its ctid, in place until the delete; SKIP LOCKED leaves rows that a
// Claim is taking over right now, and lets several sweepers (one per replica)
// share the work without waiting on each other. The outer WHERE re-checks
// expiry on the row it deletes.
const sweepSQL = `
WITH deleted AS (
	DELETE FROM %[1]s
	WHERE ctid IN (
		SELECT ctid FROM %[1]s
		WHERE expires_at >= $1 AND expires_at <= now()
		ORDER BY expires_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED
	) AND expires_at <= now()
	RETURNING expires_at
)
SELECT count(*), max(expires_at) FROM deleted`

// Sweep deletes at most batch expired records in one statement and returns
// how many it deleted. batch must be positive. Safe to run concurrently with
// every other method and with other sweepers. It is SweepFrom with no lower
// bound.
func (s *Store) Sweep(ctx context.Context, batch int) (int64, error) {
	n, _, err := s.SweepFrom(ctx, time.Time{}, batch)
	return n, err
}

// SweepFrom deletes at most batch expired records whose expiry is not before
// after (the zero time means no bound), oldest first, in one statement. It
// returns how many it deleted and the latest expiry among them, which is the
// after of the next batch of the same pass; when it deleted nothing, last is
// after. batch must be positive. Safe to run concurrently with every other
// method and with other sweepers.
//
// A record that expires before after is left alone, so a pass that resumes
// from a cursor misses records that expired behind it meanwhile (a Claim
// rolled back while the pass skipped its locked row); the next pass, which
// starts with no bound, deletes them.
func (s *Store) SweepFrom(ctx context.Context, after time.Time, batch int) (n int64, last time.Time, err error) {
	if batch <= 0 {
		return 0, after, fmt.Errorf("sweeping: batch %d must be positive", batch)
	}
	if s.partitioned {
		return 0, after, errors.New("sweeping: the partitioned layout drops partitions (DropPartitions) instead of deleting rows")
	}
	if err := ctx.Err(); err != nil {
		return 0, after, fmt.Errorf("sweeping: %w", err)
	}
	from := pgtype.Timestamptz{Time: after, Valid: true}
	if after.IsZero() {
		from = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	var latest pgtype.Timestamptz
	if err := s.db.QueryRow(ctx, s.sql.sweep, from, batch).Scan(&n, &latest); err != nil {
		return 0, after, fmt.Errorf("sweeping: %w", translate(ctx, "sweep", err))
	}
	if !latest.Valid {
		return n, after, nil
	}
	return n, latest.Time, nil
}

// SweeperConfig configures a Sweeper. The zero value is ready to use.
type SweeperConfig struct {
	// Interval is the pause between two passes. Default one minute.
	Interval time.Duration
	// Batch is the most records one statement deletes, which bounds how
	// long it holds row locks. Default DefaultSweepBatch.
	Batch int
	// Pause is the sleep between two batches of a pass, which yields the
	// database to claims while a large backlog drains. Default zero: the
	// next batch starts at once.
	Pause time.Duration
	// Logger receives one line per pass that deleted something, and sweep
	// errors. Default slog.Default().
	Logger *slog.Logger
	// OnPass, when set, is told about every pass Run makes, except one
	// cut short by the end of Run's context: how many records it deleted,
	// how long it took and its error. It is called from Run's goroutine.
	// Default none.
	OnPass func(deleted int64, took time.Duration, err error)

	// The partitioned layout's settings; Batch and Pause do not apply to
	// it. PartitionWidth is the range of created_at of each partition it
	// creates (default DefaultPartitionWidth), PartitionsAhead how many
	// partitions past the current one it keeps created (default
	// DefaultPartitionsAhead), and Grace how far in the past a partition's
	// range and expiries must lie before it is dropped (default
	// DefaultPartitionGrace; see DropPartitions).
	PartitionWidth  time.Duration
	PartitionsAhead int
	Grace           time.Duration
}

// Sweeper removes expired records periodically. PostgreSQL has no TTL, so
// without it completed and abandoned records accumulate; correctness never
// depends on it. In the rows layout it deletes expired rows in batches; in
// the partitioned layout it creates the partitions ahead of time and drops
// those whose records have all expired, so a Store on that layout needs its
// Sweeper running (claims fail once no partition covers the time).
type Sweeper struct {
	store    *Store
	interval time.Duration
	batch    int
	pause    time.Duration
	logger   *slog.Logger
	onPass   func(deleted int64, took time.Duration, err error)

	width time.Duration
	ahead int
	grace time.Duration
}

// NewSweeper returns a Sweeper of s's table. Run it on a pool-backed store.
func NewSweeper(s *Store, cfg SweeperConfig) *Sweeper {
	w := &Sweeper{store: s, interval: cfg.Interval, batch: cfg.Batch, pause: cfg.Pause, logger: cfg.Logger,
		onPass: cfg.OnPass}
	if w.interval <= 0 {
		w.interval = time.Minute
	}
	if w.batch <= 0 {
		w.batch = DefaultSweepBatch
	}
	if w.pause < 0 {
		w.pause = 0
	}
	if w.logger == nil {
		w.logger = slog.Default()
	}
	if w.onPass == nil {
		w.onPass = func(int64, time.Duration, error) {}
	}
	w.width, w.ahead, w.grace = cfg.PartitionWidth, cfg.PartitionsAhead, cfg.Grace
	if w.width <= 0 {
		w.width = DefaultPartitionWidth
	}
	if w.ahead <= 0 {
		w.ahead = DefaultPartitionsAhead
	}
	if w.grace <= 0 {
		w.grace = DefaultPartitionGrace
	}
	return w
}

// Run sweeps at once and then every interval until ctx is done, when it
// returns nil. A failed pass is logged and retried at the next tick: an
// outage of the database must not stop the service.
func (w *Sweeper) Run(ctx context.Context) error {
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	for {
		start := time.Now()
		n, err := w.Pass(ctx)
		if ctx.Err() == nil {
			w.onPass(n, time.Since(start), err)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			w.logger.WarnContext(ctx, "sweeping idempotency records", "deleted", n, "error", err)
		case n > 0:
			w.logger.InfoContext(ctx, "swept idempotency records", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Pass removes expired records and returns how many. In the partitioned
// layout it creates the partitions up to PartitionsAhead past the current
// one, then drops those whose records have all expired (see
// DropPartitions), under one hold of the maintenance lock and from one
// listing of the partitions: those it creates have not ended, and only a
// partition that ended grace before now is dropped; otherwise see
// passRows.
func (w *Sweeper) Pass(ctx context.Context) (int64, error) {
	if !w.store.partitioned {
		return w.passRows(ctx)
	}
	var n int64
	err := w.store.withMaintenance(ctx, true, func(conn *pgxpool.Conn, parts []Partition) error {
		now, err := w.createAhead(ctx, conn, parts)
		if err != nil {
			return err
		}
		_, n, err = w.store.dropPartitions(ctx, conn, parts, now, w.grace)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("sweeping: %w", err)
	}
	return n, nil
}

// CreateAhead creates, in the partitioned layout, the partitions that
// cover from now to PartitionsAhead partitions past the current one, as
// every Pass does; run it at start-up so that claims find their partition
// before the first pass. In the rows layout it does nothing.
func (w *Sweeper) CreateAhead(ctx context.Context) error {
	if !w.store.partitioned {
		return nil
	}
	return w.store.withMaintenance(ctx, true, func(conn *pgxpool.Conn, parts []Partition) error {
		_, err := w.createAhead(ctx, conn, parts)
		return err
	})
}

// createAhead is CreateAhead on conn, which holds the maintenance lock,
// with parts the partitions listed under it. It returns the database's
// time it created from.
func (w *Sweeper) createAhead(ctx context.Context, conn *pgxpool.Conn, parts []Partition) (time.Time, error) {
	now, err := dbNow(ctx, conn)
	if err != nil {
		return now, err
	}
	_, err = w.store.createPartitions(ctx, conn, parts, now, now.Add(time.Duration(w.ahead+1)*w.width), w.width)
	return now, err
}

// passRows deletes expired records batch by batch, each batch resuming at the
// expiry where the previous one stopped and sleeping Pause before it, until a
// batch comes back short or ctx is done, and returns how many it deleted. A
// pass starts with no lower bound, so it also deletes what an earlier pass
// left behind its cursor. It ends once it has caught up with the records
// expiring meanwhile: every full batch deletes batch of them.
func (w *Sweeper) passRows(ctx context.Context) (int64, error) {
	var (
		total int64
		after time.Time
	)
	for {
		n, last, err := w.store.SweepFrom(ctx, after, w.batch)
		total += n
		if err != nil || n < int64(w.batch) {
			return total, err
		}
		after = last
		if w.pause > 0 {
			t := time.NewTimer(w.pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return total, fmt.Errorf("sweeping: %w", ctx.Err())
			case <-t.C:
			}
		}
	}
}
