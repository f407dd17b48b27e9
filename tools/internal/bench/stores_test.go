package bench_test

import (
	"testing"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/tools/internal/bench"
)

// The plan measures the stores as the service sets them up by default, so
// its constants must follow the service's defaults.
func TestBackendsFollowTheServiceDefaults(t *testing.T) {
	cfg, err := app.LoadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StoreBatchSize != bench.ServiceBatchSize {
		t.Errorf("STORE_BATCH_SIZE defaults to %d, the plan measures %d", cfg.StoreBatchSize, bench.ServiceBatchSize)
	}
	// A library user's zero-value stores batch as the service does.
	for store, size := range map[string]int{"redis": redisstore.DefaultBatchSize, "postgres": postgres.DefaultBatchSize} {
		if size != cfg.StoreBatchSize {
			t.Errorf("STORE_BATCH_SIZE defaults to %d, a zero %s Config to %d", cfg.StoreBatchSize, store, size)
		}
	}
	if cfg.DedupCacheSize != bench.ServiceCacheSize {
		t.Errorf("DEDUP_CACHE_SIZE defaults to %d, the plan measures %d", cfg.DedupCacheSize, bench.ServiceCacheSize)
	}
}
