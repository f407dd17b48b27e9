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
// record is left.
func (b *Bench) Measure(ctx context.Context) (Result, error) {
	res := Result{Options: b.opts}
	sweeper := postgres.NewSweeper(b.store, postgres.SweeperConfig{
		Batch: b.opts.Batch, Pause: b.opts.Pause, Logger: slog.New(slog.DiscardHandler), Grace: time.Second,
	})
	var idle, sweeping []time.Duration
	var ratios []float64
	var seq atomic.Int64
	// Rows removed are counted in the table, not added up from passes: a
	// statement that commits as its window's context ends reports an error.
	before, err := b.filledLeft(ctx)
	if err != nil {
		return res, err
	}
	for range b.opts.Windows {
		lat, err := b.claimWindow(ctx, &seq)
		if err != nil {
			return res, err
		}
		idle = append(idle, lat...)
		idleP99 := p99(lat)

		// A pair counts only if retention had work at the start of its
		// sweeping window.
		backlog, err := b.filledLeft(ctx)
		if err != nil {
			return res, err
		}
		sctx, stop := context.WithCancel(ctx)
		busy := make(chan time.Duration)
		start := time.Now()
		go func() { busy <- sweepLikeRun(sctx, sweeper, b.opts.Window/4) }()
		lat, err = b.claimWindow(ctx, &seq)
		stop()
		res.SweepBusy += <-busy
		res.SweepTime += time.Since(start)
		if err != nil {
			return res, err
		}
		sweeping = append(sweeping, lat...)
		if idleP99 > 0 && backlog > 0 {
			ratios = append(ratios, float64(p99(lat))/float64(idleP99))
		}
	}
	res.IdleClaims, res.SweepClaims = len(idle), len(sweeping)
	res.IdleP99, res.SweepP99 = p99(idle), p99(sweeping)
	res.P99Ratio, res.Pairs = median(ratios), len(ratios)

	afterWindows, err := b.filledLeft(ctx)
	if err != nil {
		return res, err
	}
	res.SweptUnderLoad = before - afterWindows

	start := time.Now()
	for {
		n, err := sweeper.Pass(ctx)
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
	res.Drained = afterWindows - res.Left
	return res, nil
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
