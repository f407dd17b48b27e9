package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/stores/postgres"
)

// sweepingWindow runs sweeping window k: claims as claimWindow does while
// the sweeper of the window (see windowSweeper) makes its passes, after
// creating the next partition (see createNext). It adds the sweeper's time
// to res and returns the claims' latencies.
func (b *Bench) sweepingWindow(ctx context.Context, k int, seq *atomic.Int64, res *Result) ([]time.Duration, error) {
	sweeper, err := b.windowSweeper(ctx, k)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	lat, busy, err := b.upkeepWindow(ctx, seq, b.createNext, sweeper)
	res.SweepBusy += busy
	res.SweepTime += time.Since(start)
	return lat, err
}

// upkeepWindow runs claims as claimWindow does while, beside them, change
// changes the partitions and then sweeper makes its passes (see
// sweepLikeRun) until the claims end. It returns the claims' latencies and
// how long change and the passes that removed records took.
func (b *Bench) upkeepWindow(ctx context.Context, seq *atomic.Int64, change func(context.Context) error,
	sweeper *postgres.Sweeper) ([]time.Duration, time.Duration, error) {
	sctx, stop := context.WithCancel(ctx)
	done := make(chan swept)
	go func() {
		start := time.Now()
		// The round's context, not the window's: a window that ends
		// first must not leave the partitions half changed.
		err := change(ctx)
		made := time.Since(start)
		done <- swept{busy: made + sweepLikeRun(sctx, sweeper, b.opts.Window/4), err: err}
	}()
	lat, err := b.claimWindow(ctx, seq)
	stop()
	s := <-done
	return lat, s.busy, errors.Join(err, s.err)
}

// windowSweeper returns the sweeper of sweeping window k. In the
// partitioned layout its grace is how long ago, in the database's time,
// every record of partition k had expired (drops[k]): it finds that
// partition droppable and the later ones, whose records expire an hour
// apart, not yet, as the service's sweeper (grace an hour) finds one more
// partition droppable each hour. The round compresses the hour between two
// drops into the idle window between two sweeping windows. The rows layout
// has no grace: its sweeper deletes every expired record it finds.
func (b *Bench) windowSweeper(ctx context.Context, k int) (*postgres.Sweeper, error) {
	if b.opts.Layout != postgres.LayoutPartitioned || k >= len(b.drops) {
		return b.newSweeper(time.Second), nil
	}
	var now time.Time
	if err := b.pool.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return nil, fmt.Errorf("reading the time: %w", err)
	}
	grace := now.Sub(b.drops[k])
	if grace <= 0 {
		return nil, fmt.Errorf("partition %d of the fill expires at %s, after now (%s)", k, b.drops[k], now)
	}
	return b.newSweeper(grace), nil
}

// createNext creates, in the partitioned layout, the partition after the
// last one: the service's pass that finds a partition droppable each hour
// also creates the one that is coming into its PartitionsAhead, so claims
// keep looking their keys up in as many partitions. Done at the start of
// each sweeping window, it keeps their number the same in every window, so
// claims are no cheaper in a sweeping window than in the idle ones it is
// held against. In the rows layout it does nothing.
func (b *Bench) createNext(ctx context.Context) error {
	if b.opts.Layout != postgres.LayoutPartitioned {
		return nil
	}
	parts, err := b.store.Partitions(ctx)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return errors.New("creating the next partition: the records table has none")
	}
	last := parts[len(parts)-1].To
	_, err = b.store.CreatePartitions(ctx, last, last.Add(fillWidth), fillWidth)
	return err
}

// churnWindow runs a churn window: claims as claimWindow does while the
// partitions change and the sweeper makes its passes as in a sweeping
// window, but with no record removed. It creates the next partition (see
// createNext), then detaches that new, empty partition CONCURRENTLY and
// drops it, as retention does with a partition whose records have
// expired; meanwhile a sweeper that finds nothing to drop makes its passes
// as sweepingWindow's does. Every claim's plan covers the records table's
// partitions, so each change makes every connection plan its claim again;
// this window tells that cost, and the passes', apart from removing
// records. The partitions are as many after it as before.
func (b *Bench) churnWindow(ctx context.Context, seq *atomic.Int64) ([]time.Duration, error) {
	lat, _, err := b.upkeepWindow(ctx, seq, b.churn, b.newSweeper(b.keepAll()))
	return lat, err
}

// keepAll is a sweeper's grace under which no partition of the round is
// droppable: longer than any filled record has been expired (the oldest
// partition's records all expired less than Windows hours ago, see Fill),
// and the round's own records are live.
func (b *Bench) keepAll() time.Duration { return time.Duration(b.opts.Windows+1) * fillWidth }

// churn creates the next partition, then detaches and drops it.
func (b *Bench) churn(ctx context.Context) error {
	if err := b.createNext(ctx); err != nil {
		return err
	}
	parts, err := b.store.Partitions(ctx)
	if err != nil {
		return err
	}
	newest := parts[len(parts)-1].Name
	if _, err := b.pool.Exec(ctx, "ALTER TABLE idempotency_records DETACH PARTITION "+newest+" CONCURRENTLY"); err != nil {
		return fmt.Errorf("detaching partition %s: %w", newest, err)
	}
	if _, err := b.pool.Exec(ctx, "DROP TABLE "+newest); err != nil {
		return fmt.Errorf("dropping partition %s: %w", newest, err)
	}
	return nil
}

// swept is what the upkeep side of a window reports: how long changing the
// partitions and the passes that removed records took, and why it could
// not change the partitions.
type swept struct {
	busy time.Duration
	err  error
}

// newSweeper returns a sweeper of the round's store with its batch and
// pause, and the given grace.
func (b *Bench) newSweeper(grace time.Duration) *postgres.Sweeper {
	return postgres.NewSweeper(b.store, postgres.SweeperConfig{
		Batch: b.opts.Batch, Pause: b.opts.Pause, Logger: slog.New(slog.DiscardHandler), Grace: grace,
	})
}

// sweepLikeRun makes passes as Sweeper.Run does, one at once and then one
// every interval, until ctx ends, and returns how long the passes that
// removed records took. The service's interval is a minute; a window needs
// a shorter one to see more than one pass, but passes must not run back to
// back: a pass that finds nothing still reads the catalog and every
// partition's newest expiry, work the service does once a minute.
func sweepLikeRun(ctx context.Context, w *postgres.Sweeper, interval time.Duration) (busy time.Duration) {
	for {
		start := time.Now()
		if n, _ := w.Pass(ctx); n > 0 {
			busy += time.Since(start)
		}
		select {
		case <-ctx.Done():
			return busy
		case <-time.After(interval):
		}
	}
}
