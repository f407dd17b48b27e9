// Package metrics exports what the idempotent receiver observes as
// Prometheus metrics: an [Observer] for receiver.Config.Observer. It is a
// package of its own so that a service that counts otherwise compiles no
// Prometheus client.
package metrics

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// Observer is the [receiver.Observer] that exports what the receiver
// observes:
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
type Observer struct {
	outcomes   *prometheus.CounterVec
	extensions *prometheus.CounterVec
	replayed   *prometheus.CounterVec
	latency    *prometheus.HistogramVec

	// outcomes and extensions of the receiver, in the order of the
	// counters of every scope's scopeSeries.
	outcomeOrder   []receiver.Outcome
	extensionOrder []receiver.Extension

	mu     sync.RWMutex
	scopes map[string]*scopeSeries // guarded by mu

	ops [len(storeOps)]atomic.Pointer[opObserver] // bound on first use
}

// scopeSeries are a scope's counters: its outcomes in the order of
// [receiver.Outcomes], its extensions in the order of
// [receiver.Extensions], its replays.
type scopeSeries struct {
	outcomes   []prometheus.Counter
	extensions []prometheus.Counter
	replayed   prometheus.Counter
}

type opObserver struct{ prometheus.Observer }

// storeOps are the operations StoreLatency is told about.
var storeOps = [...]string{"claim", "complete", "release", "extend"}

var _ receiver.Observer = (*Observer)(nil)

// NewObserver creates the metrics and registers them with reg.
// store names the record store ("memory", "redis", "postgres"): it is the
// store label of the latencies. It fails if store is empty or the metrics
// are already registered with reg.
func NewObserver(reg prometheus.Registerer, store string) (*Observer, error) {
	if store == "" {
		return nil, errors.New("registering receiver metrics: missing store name")
	}
	o := &Observer{
		outcomeOrder:   receiver.Outcomes(),
		extensionOrder: receiver.Extensions(),
		scopes:         map[string]*scopeSeries{},
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
func (o *Observer) Init(scopes ...string) {
	for _, scope := range scopes {
		o.scope(scope)
	}
	for i, op := range storeOps {
		o.op(i, op)
	}
}

// Outcome counts one execution in scope that ended in outcome.
func (o *Observer) Outcome(scope string, outcome receiver.Outcome) {
	s := o.scope(scope)
	for i, each := range o.outcomeOrder {
		if each == outcome {
			s.outcomes[i].Inc()
			return
		}
	}
	o.outcomes.WithLabelValues(scope, string(outcome)).Inc()
}

// LeaseExtension counts one extension of a lease in scope.
func (o *Observer) LeaseExtension(scope string, e receiver.Extension) {
	s := o.scope(scope)
	for i, each := range o.extensionOrder {
		if each == e {
			s.extensions[i].Inc()
			return
		}
	}
	o.extensions.WithLabelValues(scope, string(e)).Inc()
}

// Replayed counts n messages replayed by a duplicate in scope.
func (o *Observer) Replayed(scope string, n int) {
	o.scope(scope).replayed.Add(float64(n))
}

// scope returns the counters of scope, creating every one at zero on the
// scope's first call.
func (o *Observer) scope(scope string) *scopeSeries {
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
	s = &scopeSeries{
		outcomes:   make([]prometheus.Counter, len(o.outcomeOrder)),
		extensions: make([]prometheus.Counter, len(o.extensionOrder)),
	}
	for i, each := range o.outcomeOrder {
		s.outcomes[i] = o.outcomes.WithLabelValues(scope, string(each))
	}
	for i, each := range o.extensionOrder {
		s.extensions[i] = o.extensions.WithLabelValues(scope, string(each))
	}
	s.replayed = o.replayed.WithLabelValues(scope)
	o.scopes[scope] = s
	return s
}

// StoreLatency observes the duration of one store call.
func (o *Observer) StoreLatency(op string, d time.Duration) {
	for i, each := range storeOps {
		if each == op {
			o.op(i, op).Observe(d.Seconds())
			return
		}
	}
	o.latency.WithLabelValues(op).Observe(d.Seconds())
}

// op returns the latency series of storeOps[i], binding it on first use.
func (o *Observer) op(i int, op string) prometheus.Observer {
	b := o.ops[i].Load()
	if b == nil {
		b = &opObserver{o.latency.WithLabelValues(op)}
		o.ops[i].Store(b)
	}
	return b
}
