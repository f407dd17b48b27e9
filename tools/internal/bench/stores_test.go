package bench_test

import (
	"testing"

	"github.com/onceflow/onceflow/app"
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
	if cfg.DedupCacheSize != bench.ServiceCacheSize {
		t.Errorf("DEDUP_CACHE_SIZE defaults to %d, the plan measures %d", cfg.DedupCacheSize, bench.ServiceCacheSize)
	}
}
