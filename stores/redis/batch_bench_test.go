package redisstore_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// BenchmarkClaimComplete measures a Claim and a Complete of a unique key,
// the cost of a first message, at 1, 16 and 50 concurrent callers, with
// batching off and on. pairs/s is Claim+Complete pairs per second.
func BenchmarkClaimComplete(b *testing.B) {
	// Each concurrency runs unbatched then batched, back to back, so that
	// the two see the same machine.
	for _, callers := range []int{1, 16, 50} {
		for _, mode := range []struct {
			name  string
			batch int
		}{{"unbatched", 0}, {"batched", 64}} {
			b.Run("callers="+strconv.Itoa(callers)+"/"+mode.name, func(b *testing.B) {
				c := testenv.Redis(b)
				s := redisstore.New(c, redisstore.Config{KeyPrefix: testenv.KeyPrefix(b), BatchSize: mode.batch})
				benchPairs(b, s, callers)
			})
		}
	}
}

// benchPairs runs b.N Claim+Complete pairs of unique keys spread over
// callers goroutines.
func benchPairs(b *testing.B, s stores.Store, callers int) {
	ctx := context.Background()
	fp := []byte("fingerprint")
	result := []byte("result")
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				k := "bench-" + strconv.FormatInt(i, 10)
				c, err := s.Claim(ctx, k, fp, time.Minute)
				if err != nil || c.Status != stores.Acquired {
					b.Errorf("Claim(%s) = %v, %v", k, c.Status, err)
					return
				}
				if err := s.Complete(ctx, k, c.Token, result, time.Minute); err != nil {
					b.Errorf("Complete(%s): %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
}
