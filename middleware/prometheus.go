package middleware

import (
	"fmt"
	"sync"
	"sync/atomic"
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
// It is safe for concurrent use. The label values are bound once, on a
// scope's first call and an operation's first call, so that counting a
// message hashes no labels and allocates nothing.
type PrometheusObserver struct {
	outcomes *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	mu     sync.RWMutex
	scopes map[string]*scopeCounters // guarded by mu

	ops [len(storeOps)]atomic.Pointer[opObserver] // bound on first use
}

// scopeCounters are a scope's outcome counters, in the order of Outcomes.
type scopeCounters [len(outcomeOrder)]prometheus.Counter

type opObserver struct{ prometheus.Observer }

// storeOps are the operations StoreLatency is told about.
var storeOps = [...]string{"claim", "complete", "release", "extend"}

var _ Observer = (*PrometheusObserver)(nil)

// NewPrometheusObserver creates the metrics and registers them with reg. It
// fails if they are already registered there.
func NewPrometheusObserver(reg prometheus.Registerer) (*PrometheusObserver, error) {
	o := &PrometheusObserver{
		scopes: map[string]*scopeCounters{},
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
	o.mu.RLock()
	c := o.scopes[scope]
	o.mu.RUnlock()
	if c == nil {
		c = o.bindScope(scope)
	}
	for i, each := range outcomeOrder {
		if each == outcome {
			c[i].Inc()
			return
		}
	}
	o.outcomes.WithLabelValues(scope, string(outcome)).Inc()
}

// bindScope creates every outcome counter of scope, at zero.
func (o *PrometheusObserver) bindScope(scope string) *scopeCounters {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.scopes[scope]; c != nil {
		return c
	}
	c := new(scopeCounters)
	for i, each := range outcomeOrder {
		c[i] = o.outcomes.WithLabelValues(scope, string(each))
	}
	o.scopes[scope] = c
	return c
}

// StoreLatency observes the duration of one store call.
func (o *PrometheusObserver) StoreLatency(op string, d time.Duration) {
	for i, each := range storeOps {
		if each != op {
			continue
		}
		b := o.ops[i].Load()
		if b == nil {
			b = &opObserver{o.latency.WithLabelValues(op)}
			o.ops[i].Store(b)
		}
		b.Observe(d.Seconds())
		return
	}
	o.latency.WithLabelValues(op).Observe(d.Seconds())
}
