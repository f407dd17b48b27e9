package redisstore_test

import (
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) stores.Store {
		return redisstore.New(testenv.Redis(b), redisstore.Config{KeyPrefix: testenv.KeyPrefix(b)})
	})
}
