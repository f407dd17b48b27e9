package middleware

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PrometheusObserver exports what the receiver observes:
//
//	onceflow_receiver_outcomes_total{scope,outcome}  counter
//	onceflow_lease_extensions_total{scope,result}    counter
//	onceflow_replayed_messages_total{scope}          counter
//	onceflow_store_duration_seconds{op,store}        histogram
//
// The scope is a handler name, or "http" for the HTTP face. A lease lost to
// another owner shows twice from the side of the owner that lost it: as
// result="lost" when its heartbeat found out, and as the lease_lost
// outcome of its execution.
//
// Every series of a scope is exported (at zero) from the scope's first call,
// or from Init, so that rates and alerts work before the first duplicate or
// error. It is safe for concurrent use. The label values are bound once, on
// a scope's first call and an operation's first call, so that counting a
// message hashes no labels and allocates nothing.
type PrometheusObserver struct {
	outcomes   *prometheus.CounterVec
	extensions *prometheus.CounterVec
	replayed   *prometheus.CounterVec
	latency    *prometheus.HistogramVec

	mu     sync.RWMutex
	scopes map[string]*scopeSeries // guarded by mu

	ops [len(storeOps)]atomic.Pointer[opObserver] // bound on first use
}

// scopeSeries are a scope's counters: its outcomes in the order of
// Outcomes, its extensions in the order of extensionOrder, its replays.
type scopeSeries struct {
	outcomes   [len(outcomeOrder)]prometheus.Counter
	extensions [len(extensionOrder)]prometheus.Counter
	replayed   prometheus.Counter
}

type opObserver struct{ prometheus.Observer }

// storeOps are the operations StoreLatency is told about.
var storeOps = [...]string{"claim", "complete", "release", "extend"}

var _ Observer = (*PrometheusObserver)(nil)

// NewPrometheusObserver creates the metrics and registers them with reg.
// store names the record store ("memory", "redis", "postgres"): it is the
// store label of the latencies. It fails if store is empty or the metrics
// are already registered with reg.
func NewPrometheusObserver(reg prometheus.Registerer, store string) (*PrometheusObserver, error) {
	if store == "" {
		return nil, errors.New("registering receiver metrics: missing store name")
	}
	o := &PrometheusObserver{
		scopes: map[string]*scopeSeries{},
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_receiver_outcomes_total",
			Help: "Idempotent receiver executions by scope (handler name or http) and outcome.",
		}, []string{"scope", "outcome"}),
		extensions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_lease_extensions_total",
			Help: "Heartbeat extensions of a lease by scope and result (extended; lost: the key is no longer ours; failed: store error).",
		}, []string{"scope", "result"}),
		replayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_replayed_messages_total",
			Help: "Stored produced messages handed back for publishing again by duplicates, by scope (handler name).",
		}, []string{"scope"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "onceflow_store_duration_seconds",
			Help:        "Latency of idempotency store calls by operation (claim, complete, release, extend) and store.",
			ConstLabels: prometheus.Labels{"store": store},
			// 100µs to about 3s: in-memory and Redis calls sit at the low end.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{o.outcomes, o.extensions, o.replayed, o.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering receiver metrics: %w", err)
		}
	}
	return o, nil
}

// Init exports every series of each scope at zero, and the latency of
// every store operation, before any call: a service passes the names of
// its handlers, and "http".
func (o *PrometheusObserver) Init(scopes ...string) {
	for _, scope := range scopes {
		o.scope(scope)
	}
	for i, op := range storeOps {
		o.op(i, op)
	}
}

// Outcome counts one execution in scope that ended in outcome.
func (o *PrometheusObserver) Outcome(scope string, outcome Outcome) {
	s := o.scope(scope)
	for i, each := range outcomeOrder {
		if each == outcome {
			s.outcomes[i].Inc()
			return
		}
	}
	o.outcomes.WithLabelValues(scope, string(outcome)).Inc()
}

// LeaseExtension counts one extension of a lease in scope.
func (o *PrometheusObserver) LeaseExtension(scope string, e Extension) {
	s := o.scope(scope)
	for i, each := range extensionOrder {
		if each == e {
			s.extensions[i].Inc()
			return
		}
	}
	o.extensions.WithLabelValues(scope, string(e)).Inc()
}

// Replayed counts n messages replayed by a duplicate in scope.
func (o *PrometheusObserver) Replayed(scope string, n int) {
	o.scope(scope).replayed.Add(float64(n))
}

// scope returns the counters of scope, creating every one at zero on the
// scope's first call.
func (o *PrometheusObserver) scope(scope string) *scopeSeries {
	o.mu.RLock()
	s := o.scopes[scope]
	o.mu.RUnlock()
	if s != nil {
		return s
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := o.scopes[scope]; s != nil {
		return s
	}
	s = new(scopeSeries)
	for i, each := range outcomeOrder {
		s.outcomes[i] = o.outcomes.WithLabelValues(scope, string(each))
	}
	for i, each := range extensionOrder {
		s.extensions[i] = o.extensions.WithLabelValues(scope, string(each))
	}
	s.replayed = o.replayed.WithLabelValues(scope)
	o.scopes[scope] = s
	return s
}

// StoreLatency observes the duration of one store call.
func (o *PrometheusObserver) StoreLatency(op string, d time.Duration) {
	for i, each := range storeOps {
		if each == op {
			o.op(i, op).Observe(d.Seconds())
			return
		}
	}
	o.latency.WithLabelValues(op).Observe(d.Seconds())
}

// op returns the latency series of storeOps[i], binding it on first use.
func (o *PrometheusObserver) op(i int, op string) prometheus.Observer {
	b := o.ops[i].Load()
	if b == nil {
		b = &opObserver{o.latency.WithLabelValues(op)}
		o.ops[i].Store(b)
	}
	return b
}
