package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// httpParts is what newHTTPServers serves.
type httpParts struct {
	cfg Config
	// api is the domain's API.
	api domain.HTTP
	// keysAdmin is the key admin; nil when no admin key is set.
	keysAdmin http.Handler
	receiver  *receiver.Receiver
	router    *message.Router
	store     idempotencyStore
	// broker checks the broker for /readyz; nil when there is none.
	broker  func(context.Context) error
	reg     *prometheus.Registry
	tracing tracing
	logger  *slog.Logger
}

// newHTTPServers returns the server of the domain's API on HTTP_ADDR and,
// when INTERNAL_ADDR is set, the internal server of /metrics, /healthz,
// /readyz and the key admin (/admin/); unset, internal is nil and the
// public server serves those too, as the routes of its own that the API
// cannot take.
//
// The API (every other path) sits behind Authenticate when API_KEYS is
// set; unset, New has refused to start unless ALLOW_ANONYMOUS=true, and
// every caller is one anonymous client (the face's WithAnonymous). Its
// unsafe routes (those of the domain's IdempotentRoutes) sit behind the
// receiver's HTTP face, which requires an Idempotency-Key and holds each
// client to IDEMPOTENCY_CLIENT_RECORDS new keys per
// IDEMPOTENCY_CLIENT_WINDOW. Outermost first:
//
//	authentication -> tracing -> routing (sets r.Pattern) -> Idempotency-Key -> handler
//
// Both write their errors with problem.Write, as the handlers do, so every
// problem the service answers comes from one writer and one table of
// statuses. The key admin (/admin/keys/..., ADMIN_API_KEYS) has its own
// authentication and exists only when keysAdmin is set. /metrics and the
// probes are open: INTERNAL_ADDR keeps them off the public port.
func newHTTPServers(p httpParts) (public, internal *http.Server, err error) {
	api, err := newAPI(p)
	if err != nil {
		return nil, nil, err
	}
	ops := http.NewServeMux()
	if p.keysAdmin != nil {
		ops.Handle("/admin/", p.keysAdmin)
	}
	ops.Handle("GET /metrics", promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{Registry: p.reg}))
	// /healthz: the process is up and serving.
	ops.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, "ok", nil)
	})
	// /readyz: the router is consuming, the store answers and the broker
	// can be reached; checked at most once a second (see readiness).
	router := p.router
	running := func() bool { return router.IsRunning() && !router.IsClosed() }
	ops.Handle("GET /readyz", newReadiness(running, p.store.ping, p.broker, p.logger))

	if p.cfg.InternalAddr != "" {
		return newServer(api, p.logger), newServer(ops, p.logger), nil
	}
	ops.Handle("/", api)
	return newServer(ops, p.logger), nil, nil
}

// newAPI is the domain's API behind the HTTP face and, with API_KEYS set,
// authentication.
func newAPI(p httpParts) (http.Handler, error) {
	cfg, reg := p.cfg, p.reg
	opts := []idempotencykey.Option{
		idempotencykey.WithMaxStoredResponse(cfg.IdempotencyMaxBody),
		idempotencykey.WithClientQuota(cfg.IdempotencyClientRecords, cfg.IdempotencyClientWindow),
		idempotencykey.WithClientBytes(cfg.IdempotencyClientBytes),
		idempotencykey.WithReplayedHeaders(p.api.ReplayedHeaders...),
	}
	if p.api.MaxRequestBody > 0 {
		opts = append(opts, idempotencykey.WithMaxRequestBody(p.api.MaxRequestBody))
	}
	keys, err := cfg.apiKeys()
	if err != nil {
		return nil, err
	}
	if keys == nil && cfg.anonymous() {
		opts = append(opts, idempotencykey.WithAnonymous())
	}
	guard, err := httpIdempotencyMetrics(reg, idempotencykey.Middleware(p.receiver, opts...))
	if err != nil {
		return nil, err
	}
	v1 := http.NewServeMux()
	if p.api.Register != nil {
		p.api.Register(v1, guard)
	}
	// A span per request when tracing is on, inside authentication: a
	// request without a valid key starts no trace (nor continues the
	// traceparent it sent) and costs no exported span.
	apiHandler := p.tracing.api(v1, v1)
	if keys != nil {
		apiHandler = apikey.Authenticate(keys, nil)(apiHandler)
	}
	return withDeadline(cfg.HandlerTimeout, apiHandler), nil
}

// withDeadline ends each request's context timeout after the request
// begins: what the handler waits on (a message's delivery, the database)
// gives up then, and the handler answers, within the server's write
// timeout and the shutdown's bound.
func withDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// writeTimeout bounds the writing of an answer, HANDLER_TIMEOUT's request
// deadline included.
const writeTimeout = 30 * time.Second

// newServer is an HTTP server of h with the service's timeouts, logging
// its errors to logger.
func newServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

func writeStatus(w http.ResponseWriter, code int, status string, checks map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks,omitempty"`
	}{status, checks})
}
