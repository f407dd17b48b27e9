package redisstore_test

import (
	"strconv"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/storetest"
)

// BenchmarkStore runs the store benchmarks with batching off and at the
// service's default batch size, so the two read side by side.
func BenchmarkStore(b *testing.B) {
	for _, batch := range []int{1, redisstore.DefaultBatchSize} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			storetest.Bench(b, func(b *testing.B) stores.Store {
				return testenv.RedisStore(b, testenv.Redis(b), redisstore.Config{KeyPrefix: testenv.KeyPrefix(b), BatchSize: batch})
			})
		})
	}
}
