package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Leases and TTLs of the measured claims: long enough that the sweeper never
// deletes them during a round.
const (
	claimLease = time.Minute
	claimTTL   = time.Hour
)

// Measure alternates idle and sweeping windows of claims, then drains the
// rest of the backlog with no claims running, and checks that no filled
// record is left. In the partitioned layout sweeping window k drops
// partition k of the fill (see windowSweeper).
func (b *Bench) Measure(ctx context.Context) (Result, error) {
	res := Result{Options: b.opts}
	var idle, sweeping []time.Duration
	var seq atomic.Int64
	// Rows removed are counted in the table, not added up from passes: a
	// statement that commits as its window's context ends reports an error.
	before, err := b.filledLeft(ctx)
	if err != nil {
		return res, err
	}
	left := before
	for k := range b.opts.Windows {
		lat, err := b.claimWindow(ctx, &seq)
		if err != nil {
			return res, err
		}
		idle = append(idle, lat...)
		idleP99 := p99(lat)

		sweeper, err := b.windowSweeper(ctx, k)
		if err != nil {
			return res, err
		}
		sctx, stop := context.WithCancel(ctx)
		done := make(chan swept)
		start := time.Now()
		go func() {
			err := b.createNext(sctx)
			made := time.Since(start)
			done <- swept{busy: made + sweepLikeRun(sctx, sweeper, b.opts.Window/4), err: err}
		}()
		lat, err = b.claimWindow(ctx, &seq)
		stop()
		s := <-done
		res.SweepBusy += s.busy
		res.SweepTime += time.Since(start)
		if err = errors.Join(err, s.err); err != nil {
			return res, err
		}
		sweeping = append(sweeping, lat...)

		// A pair counts only if retention removed records in its
		// sweeping window: one with nothing to remove says nothing
		// about its cost.
		after, err := b.filledLeft(ctx)
		if err != nil {
			return res, err
		}
		removed := left - after
		left = after
		if idleP99 > 0 && removed > 0 {
			res.Ratios = append(res.Ratios, float64(p99(lat))/float64(idleP99))
		}
	}
	res.IdleClaims, res.SweepClaims = len(idle), len(sweeping)
	res.IdleP99, res.SweepP99 = p99(idle), p99(sweeping)
	res.P99Ratio, res.Pairs = median(res.Ratios), len(res.Ratios)
	res.SweptUnderLoad = before - left

	start := time.Now()
	drain := b.newSweeper(time.Second)
	for {
		n, err := drain.Pass(ctx)
		if err != nil {
			return res, fmt.Errorf("draining: %w", err)
		}
		if n == 0 {
			break
		}
	}
	res.DrainTime = time.Since(start)
	if res.Left, err = b.filledLeft(ctx); err != nil {
		return res, err
	}
	res.Drained = left - res.Left
	return res, nil
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
// each sweeping window, it keeps the partitions as many in the idle and the
// sweeping window of a pair, and claims no cheaper in the second. In the
// rows layout it does nothing.
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
	if _, err := b.store.CreatePartitions(ctx, last, last.Add(fillWidth), fillWidth); err != nil {
		return err
	}
	return nil
}

// swept is what the sweeping side of a window reports: how long its passes
// that removed records took, and why it could not create the next
// partition.
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

// claimWindow runs opts.Callers goroutines doing Claim+Complete on unique keys
// for one window and returns the latency of every Claim.
func (b *Bench) claimWindow(ctx context.Context, seq *atomic.Int64) ([]time.Duration, error) {
	wctx, cancel := context.WithTimeout(ctx, b.opts.Window)
	defer cancel()
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	fingerprint := []byte("fingerprint")
	for range b.opts.Callers {
		wg.Go(func() {
			var lat []time.Duration
			var err error
			for wctx.Err() == nil {
				key := fmt.Sprintf("claim-%d", seq.Add(1))
				start := time.Now()
				var c stores.Claim
				// The window's end must not cut a claim short: its latency
				// would be the deadline's, not the database's.
				c, err = b.store.Claim(ctx, key, fingerprint, claimLease)
				if err != nil {
					break
				}
				lat = append(lat, time.Since(start))
				if c.Status != stores.Acquired {
					err = fmt.Errorf("claiming unique key %s: got %v, want acquired", key, c.Status)
					break
				}
				if err = b.store.Complete(ctx, key, c.Token, fingerprint, claimTTL); err != nil {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return all, errors.Join(errs...)
}

// median returns the median of v, zero when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// p99 returns the 99th percentile of lat (nearest rank), zero when empty.
func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := (len(s)*99+99)/100 - 1
	return s[min(i, len(s)-1)]
}
