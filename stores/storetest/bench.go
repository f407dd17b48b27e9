package storetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// BenchCallers are the concurrencies the store benchmarks run at.
var BenchCallers = []int{1, 16, 50}

// Bench runs BenchClaimComplete and BenchClaimDuplicate at each of
// BenchCallers, as sub-benchmarks named after them.
func Bench(b *testing.B, newStore func(b *testing.B) stores.Store) {
	for _, n := range BenchCallers {
		b.Run("ClaimComplete/callers="+strconv.Itoa(n), func(b *testing.B) { BenchClaimComplete(b, newStore, n) })
		b.Run("ClaimDuplicate/callers="+strconv.Itoa(n), func(b *testing.B) { BenchClaimDuplicate(b, newStore, n) })
	}
}

// BenchClaimComplete measures a unique message's store cost: each of b.N
// operations Claims a fresh key and Completes it, spread over callers
// goroutines. It reports allocations per operation and calls/s.
func BenchClaimComplete(b *testing.B, newStore func(b *testing.B) stores.Store, callers int) {
	s := newStore(b)
	prefix := b.Name() + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	result := []byte("result")
	benchCallers(b, callers, func(ctx context.Context, i int64) error {
		key := prefix + strconv.FormatInt(i, 36)
		c, err := s.Claim(ctx, key, fingerprint, longLease)
		if err != nil {
			return err
		}
		if c.Status != stores.Acquired {
			b.Errorf("Claim(%q) of a fresh key = %v, want acquired", key, c.Status)
			return nil
		}
		return s.Complete(ctx, key, c.Token, result, time.Minute)
	})
	b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchClaimDuplicate measures a duplicate's store cost: each of b.N
// operations Claims a key completed before the clock started (one per
// caller), spread over callers goroutines. It reports allocations per
// operation and calls/s.
func BenchClaimDuplicate(b *testing.B, newStore func(b *testing.B) stores.Store, callers int) {
	s := newStore(b)
	prefix := b.Name() + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	keys := make([]string, callers)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
		c, err := s.Claim(b.Context(), keys[i], fingerprint, longLease)
		if err != nil || c.Status != stores.Acquired {
			b.Fatalf("Claim(%q) = %v, %v; want acquired", keys[i], c.Status, err)
		}
		if err := s.Complete(b.Context(), keys[i], c.Token, []byte("result"), time.Minute); err != nil {
			b.Fatalf("Complete(%q): %v", keys[i], err)
		}
	}
	benchCallers(b, callers, func(ctx context.Context, i int64) error {
		key := keys[i%int64(callers)]
		c, err := s.Claim(ctx, key, fingerprint, longLease)
		if err != nil {
			return err
		}
		if c.Status != stores.Completed {
			b.Errorf("Claim(%q) of a completed key = %v, want completed", key, c.Status)
		}
		return nil
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// benchCallers runs op b.N times in all, numbered from 0, over callers
// goroutines, with the timer and allocation count covering only that. First,
// untimed, each caller runs op once (numbered from b.N), so connections are
// open before the clock starts.
func benchCallers(b *testing.B, callers int, op func(ctx context.Context, i int64) error) {
	b.Helper()
	ctx := b.Context()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		once sync.Once
		ferr error
	)
	for k := range callers {
		wg.Go(func() {
			if err := op(ctx, int64(b.N+k)); err != nil {
				once.Do(func() { ferr = err })
			}
		})
	}
	wg.Wait()
	if ferr != nil {
		b.Fatal(ferr)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				if err := op(ctx, i); err != nil {
					once.Do(func() { ferr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if ferr != nil {
		b.Fatal(ferr)
	}
}
