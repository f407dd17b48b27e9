package app

import (
	"fmt"
	"net/http"
	"time"

	wmmetrics "github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/metrics"
)

// The service's metrics, all on the App's own registry and served on
// /metrics. Besides the Go and process collectors:
//
//	onceflow_receiver_outcomes_total{scope,outcome}         the receiver (metrics.Observer)
//	onceflow_lease_extensions_total{scope,result}
//	onceflow_replayed_messages_total{scope}
//	onceflow_store_duration_seconds{op,store}
//	onceflow_router_handler_execution_time_seconds{handler_name,success}  Watermill (components/metrics)
//	onceflow_router_subscriber_messages_received_total{handler_name,subscriber_name,acked}
//	onceflow_router_publish_time_seconds{handler_name,publisher_name,success}
//	onceflow_http_idempotency_responses_total{code,method}  the API's unsafe routes
//	onceflow_sweeper_deleted_records_total                  STORE=postgres
//	onceflow_sweeper_pass_duration_seconds{result}
//	onceflow_poisoned_messages_total{topic}                 the poison log (metrics.PoisonLog)
//	onceflow_dedup_cache_lookups_total{result}              cache.go
//	onceflow_store_batch_calls{op}                          batchmetrics.go
//	onceflow_store_durability{setting,state}                durability.go
//	onceflow_admin_auth_failures_total                      admin.go, with ADMIN_API_KEY

// receiverMetrics is the receiver's observer, its series for every route
// and for the HTTP face exported at zero from the start: the handler
// labels come from the routes, so a route the domain adds is labelled
// without a change here.
func receiverMetrics(reg prometheus.Registerer, store string, routes domain.Routes) (*metrics.Observer, error) {
	o, err := metrics.NewObserver(reg, store)
	if err != nil {
		return nil, err
	}
	o.Init(append([]string{idempotencykey.Scope}, routes.Names()...)...)
	return o, nil
}

// routerMetrics builds Watermill's Prometheus metrics of the router, named
// onceflow_router_*: newRouter registers its middleware outermost but for
// the recoverer, so it times every delivery, duplicates included, and
// decorates the handlers' subscribers and publishers.
func routerMetrics(reg prometheus.Registerer) wmmetrics.PrometheusMetricsBuilder {
	return wmmetrics.NewPrometheusMetricsBuilder(reg, "onceflow", "router")
}

// httpIdempotencyMetrics counts the answers of the routes behind the
// Idempotency-Key middleware (guard) by status code and method: the
// handler's own, the replays, and the middleware's 400, 409, 422, 429 and
// 503.
func httpIdempotencyMetrics(reg prometheus.Registerer, guard func(http.Handler) http.Handler) (func(http.Handler) http.Handler, error) {
	responses := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_http_idempotency_responses_total",
		Help: "Answers of the API's routes behind the Idempotency-Key middleware, by status code and method.",
	}, []string{"code", "method"})
	if err := reg.Register(responses); err != nil {
		return nil, fmt.Errorf("registering HTTP metrics: %w", err)
	}
	return func(next http.Handler) http.Handler {
		return promhttp.InstrumentHandlerCounter(responses, guard(next))
	}, nil
}

// sweeperMetrics returns the postgres sweeper's OnPass, which counts the
// records each pass deletes and times it.
func sweeperMetrics(reg prometheus.Registerer) (func(int64, time.Duration, error), error) {
	deleted := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "onceflow_sweeper_deleted_records_total",
		Help: "Expired idempotency records the PostgreSQL sweeper deleted.",
	})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "onceflow_sweeper_pass_duration_seconds",
		Help:    "Duration of the PostgreSQL sweeper's passes, by result (ok, error).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9), // 1ms to about 1 min
	}, []string{"result"})
	for _, c := range []prometheus.Collector{deleted, duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering sweeper metrics: %w", err)
		}
	}
	ok, failed := duration.WithLabelValues("ok"), duration.WithLabelValues("error")
	return func(n int64, took time.Duration, err error) {
		deleted.Add(float64(n))
		if err != nil {
			failed.Observe(took.Seconds())
			return
		}
		ok.Observe(took.Seconds())
	}, nil
}
