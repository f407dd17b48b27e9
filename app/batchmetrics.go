package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// batched reports whether the store batches concurrent calls:
// STORE_BATCH_SIZE above one on a networked store, and on PostgreSQL in
// lease mode only: in transaction mode a batch would wait as a whole on a
// row an open transaction holds.
func (c Config) batched() bool {
	return c.StoreBatchSize > 1 && (c.Store == "redis" || (c.Store == "postgres" && c.DedupMode == "lease"))
}

// batchMetrics returns the store's BatchObserver, which records how many
// calls each batch carried on reg as
//
//	onceflow_store_batch_calls{op="claim|complete"}
//
// a histogram: its sum over its count is the mean batch, the figure that
// tells whether STORE_BATCH_SIZE and the load let batches fill.
func batchMetrics(reg prometheus.Registerer) (func(op string, calls int), error) {
	calls := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "onceflow_store_batch_calls",
		Help:    "Calls each batch of the record store carried, by operation; a call sent alone is a batch of one.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8), // 1 to 128
	}, []string{"op"})
	if err := reg.Register(calls); err != nil {
		return nil, fmt.Errorf("registering batch metrics: %w", err)
	}
	claim, complete := calls.WithLabelValues("claim"), calls.WithLabelValues("complete")
	return func(op string, n int) {
		switch op {
		case "claim":
			claim.Observe(float64(n))
		case "complete":
			complete.Observe(float64(n))
		}
	}, nil
}
