package middleware

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PrometheusObserver exports the receiver's outcomes and store latencies:
//
//	onceflow_receiver_outcomes_total{scope,outcome}  counter
//	onceflow_store_duration_seconds{op}              histogram
//
// Every outcome of a scope is exported (at zero) from the scope's first
// call, so that rates and alerts work before the first duplicate or error.
// It is safe for concurrent use.
type PrometheusObserver struct {
	outcomes *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	scopes   sync.Map // scope -> struct{}: scopes whose outcomes are initialised
}

var _ Observer = (*PrometheusObserver)(nil)

// NewPrometheusObserver creates the metrics and registers them with reg. It
// fails if they are already registered there.
func NewPrometheusObserver(reg prometheus.Registerer) (*PrometheusObserver, error) {
	o := &PrometheusObserver{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_receiver_outcomes_total",
			Help: "Idempotent receiver executions by scope (handler name or http) and outcome.",
		}, []string{"scope", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "onceflow_store_duration_seconds",
			Help: "Latency of idempotency store calls by operation (claim, complete, release, extend).",
			// 100µs to about 3s: in-memory and Redis calls sit at the low end.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{o.outcomes, o.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering receiver metrics: %w", err)
		}
	}
	return o, nil
}

// Outcome counts one execution in scope that ended in outcome.
func (o *PrometheusObserver) Outcome(scope string, outcome Outcome) {
	if _, seen := o.scopes.LoadOrStore(scope, struct{}{}); !seen {
		for _, each := range Outcomes() {
			o.outcomes.WithLabelValues(scope, string(each))
		}
	}
	o.outcomes.WithLabelValues(scope, string(outcome)).Inc()
}

// StoreLatency observes the duration of one store call.
func (o *PrometheusObserver) StoreLatency(op string, d time.Duration) {
	o.latency.WithLabelValues(op).Observe(d.Seconds())
}
