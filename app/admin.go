package app

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/stores"
)

// adminAPI is the key admin on the receiver's store (through its local
// cache, which then drops what it removes), for the routes' handlers, the
// HTTP face's routes and API_KEYS' clients, its refused requests counted;
// nil when ADMIN_API_KEY is unset, so that its routes do not exist.
func (b *assembly) adminAPI() (http.Handler, error) {
	if b.cfg.AdminAPIKey == "" {
		return nil, nil
	}
	store, ok := b.store.Store.(stores.Admin)
	if !ok {
		return nil, fmt.Errorf("ADMIN_API_KEY is set but the store (%T) cannot be administered", b.store.Store)
	}
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "onceflow_admin_auth_failures_total",
		Help: "Requests to the key admin refused for a missing or wrong ADMIN_API_KEY.",
	})
	if err := b.reg.Register(failures); err != nil {
		return nil, err
	}
	cfg := admin.Config{Store: store, Handlers: b.parts.Routes.Names(), HTTPRoutes: b.parts.HTTP.IdempotentRoutes, Logger: b.logger,
		OnAuthFailure: failures.Inc}
	keys, err := b.cfg.apiKeys()
	if err != nil {
		return nil, err
	}
	if keys != nil {
		cfg.Clients = keys.Clients()
	}
	svc, err := admin.New(cfg)
	if err != nil {
		return nil, err
	}
	return svc.Handler(b.cfg.AdminAPIKey)
}
