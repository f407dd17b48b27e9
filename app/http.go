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

	"github.com/onceflow/onceflow/handlers"
)

// readinessTimeout bounds the store check behind /readyz.
const readinessTimeout = 2 * time.Second

// newHTTPServer serves the payments API, /metrics, /healthz and /readyz.
func newHTTPServer(api *handlers.HTTP, router *message.Router, store idempotencyStore, reg *prometheus.Registry, logger *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	api.Routes(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// /healthz: the process is up and serving.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, "ok", nil)
	})
	// /readyz: the router is consuming and the store answers.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		checks := map[string]string{"router": "ok", "store": "ok"}
		status := http.StatusOK
		if !router.IsRunning() || router.IsClosed() {
			checks["router"], status = "not running", http.StatusServiceUnavailable
		}
		ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
		defer cancel()
		if err := store.ping(ctx); err != nil {
			logger.Warn("readiness: store unreachable", "err", err)
			checks["store"], status = "unreachable", http.StatusServiceUnavailable
		}
		verdict := "ready"
		if status != http.StatusOK {
			verdict = "not ready"
		}
		writeStatus(w, status, verdict, checks)
	})
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
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
