package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// sweepSQL deletes up to $1 expired records, oldest first. Expired records
// are already absent as far as the contract goes (Claim takes them over,
// Complete, Release and Extend refuse them), so deleting one changes no
// outcome; it only reclaims space. An in-progress record whose lease ended
// goes too: its owner can no longer complete it. SKIP LOCKED leaves rows that
// a Claim is taking over right now, and lets several sweepers (one per
// replica) share the work without waiting on each other; the outer WHERE
// re-checks expiry on the row it deletes.
const sweepSQL = `
DELETE FROM %[1]s
WHERE key IN (
	SELECT key FROM %[1]s
	WHERE expires_at <= now()
	ORDER BY expires_at
	LIMIT $1
	FOR UPDATE SKIP LOCKED
) AND expires_at <= now()`

// Sweep deletes at most batch expired records in one statement and returns
// how many it deleted. batch must be positive. Safe to run concurrently with
// every other method and with other sweepers.
func (s *Store) Sweep(ctx context.Context, batch int) (int64, error) {
	if batch <= 0 {
		return 0, fmt.Errorf("sweeping: batch %d must be positive", batch)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sweeping: %w", err)
	}
	tag, err := s.db.Exec(ctx, s.sql.sweep, batch)
	if err != nil {
		return 0, fmt.Errorf("sweeping: %w", translate(ctx, "sweep", err))
	}
	return tag.RowsAffected(), nil
}

// SweeperConfig configures a Sweeper. The zero value is ready to use.
type SweeperConfig struct {
	// Interval is the pause between two passes. Default one minute.
	Interval time.Duration
	// Batch is the most records one statement deletes, which bounds how
	// long it holds row locks. Default 1000.
	Batch int
	// Logger receives one line per pass that deleted something, and sweep
	// errors. Default slog.Default().
	Logger *slog.Logger
}

// Sweeper deletes expired records periodically. PostgreSQL has no TTL, so
// without it completed and abandoned records accumulate; correctness never
// depends on it.
type Sweeper struct {
	store    *Store
	interval time.Duration
	batch    int
	logger   *slog.Logger
}

// NewSweeper returns a Sweeper of s's table. Run it on a pool-backed store.
func NewSweeper(s *Store, cfg SweeperConfig) *Sweeper {
	w := &Sweeper{store: s, interval: cfg.Interval, batch: cfg.Batch, logger: cfg.Logger}
	if w.interval <= 0 {
		w.interval = time.Minute
	}
	if w.batch <= 0 {
		w.batch = 1000
	}
	if w.logger == nil {
		w.logger = slog.Default()
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
		n, err := w.Pass(ctx)
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

// Pass deletes expired records batch by batch until a batch comes back short
// or ctx is done, and returns how many it deleted.
func (w *Sweeper) Pass(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := w.store.Sweep(ctx, w.batch)
		total += n
		if err != nil || n < int64(w.batch) {
			return total, err
		}
	}
}
