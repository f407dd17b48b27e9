package retention

import (
	"context"
	"errors"
	"fmt"
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

// Measure alternates idle and sweeping windows of claims, idle first and
// last (Windows sweeping windows between Windows+1 idle ones), then drains
// the rest of the backlog with no claims running, and checks that no
// filled record is left. In the partitioned layout sweeping window k drops
// partition k of the fill (see windowSweeper).
//
// Each sweeping window is held against the idle windows on either side of
// it, their claims pooled: claims slow down over a round as the table
// grows, and an idle window on one side only would charge that drift to
// retention. With Options.Churn, in the partitioned layout, each sweeping
// window's idle neighbour is followed by a churn window and another idle
// window, and each churn window is held against its neighbours the same
// way.
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
	prev, err := b.claimWindow(ctx, &seq)
	if err != nil {
		return res, err
	}
	idle = append(idle, prev...)
	res.IdleWindows = 1
	// held runs the idle window after a window whose claims took lat and
	// returns lat's p99 over that of the idle windows either side of it;
	// ok is false when they had no claims.
	held := func(lat []time.Duration) (ratio float64, ok bool, err error) {
		next, err := b.claimWindow(ctx, &seq)
		if err != nil {
			return 0, false, err
		}
		idle = append(idle, next...)
		res.IdleWindows++
		ref := p99(slices.Concat(prev, next))
		prev = next
		if ref <= 0 {
			return 0, false, nil
		}
		return float64(p99(lat)) / float64(ref), true, nil
	}
	for k := range b.opts.Windows {
		lat, err := b.sweepingWindow(ctx, k, &seq, &res)
		if err != nil {
			return res, err
		}
		sweeping = append(sweeping, lat...)
		after, err := b.filledLeft(ctx)
		if err != nil {
			return res, err
		}
		removed := left - after
		left = after

		ratio, ok, err := held(lat)
		if err != nil {
			return res, err
		}
		// A pair counts only if retention removed records in its
		// sweeping window: one with nothing to remove says nothing
		// about its cost.
		if ok && removed > 0 {
			res.Ratios = append(res.Ratios, ratio)
		}
		if !b.opts.Churn || b.opts.Layout != postgres.LayoutPartitioned {
			continue
		}
		churn, err := b.churnWindow(ctx, &seq)
		if err != nil {
			return res, err
		}
		if ratio, ok, err = held(churn); err != nil {
			return res, err
		}
		if ok {
			res.ChurnRatios = append(res.ChurnRatios, ratio)
		}
	}
	res.IdleClaims, res.SweepClaims = len(idle), len(sweeping)
	res.IdleP99, res.SweepP99 = p99(idle), p99(sweeping)
	res.P99Ratio, res.Pairs = median(res.Ratios), len(res.Ratios)
	res.ChurnP99Ratio = median(res.ChurnRatios)
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
