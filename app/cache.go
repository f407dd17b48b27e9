package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/cache"
)

// cached reports whether the store gets the local cache of completed
// records: DEDUP_CACHE_SIZE above zero, a networked store, and lease mode
// (in transaction mode the claim is part of the handler's transaction, so
// it must reach PostgreSQL).
func (c Config) cached() bool {
	return c.DedupCacheSize > 0 && c.DedupMode == "lease" && (c.Store == "redis" || c.Store == "postgres")
}

// withCache puts the local cache of completed records in front of s, sized
// by DEDUP_CACHE_SIZE and bounded in staleness by DEDUP_CACHE_MAX_AGE, its
// lookups counted on reg as
//
//	onceflow_dedup_cache_lookups_total{result="hit|miss"}
func withCache(s stores.Store, cfg Config, reg prometheus.Registerer) (stores.Store, error) {
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_dedup_cache_lookups_total",
		Help: "Claims looked up in the local cache of completed idempotency records, by result (hit: answered without a store round trip).",
	}, []string{"result"})
	if err := reg.Register(lookups); err != nil {
		return nil, fmt.Errorf("registering cache metrics: %w", err)
	}
	hit, miss := lookups.WithLabelValues(cache.Hit.String()), lookups.WithLabelValues(cache.Miss.String())
	return cache.New(s, cache.Config{
		Size:   cfg.DedupCacheSize,
		MaxAge: cfg.DedupCacheMaxAge,
		Observer: func(e cache.Event) {
			switch e {
			case cache.Hit:
				hit.Inc()
			case cache.Miss:
				miss.Inc()
			}
		},
	}), nil
}
