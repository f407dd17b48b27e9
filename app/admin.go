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
// HTTP face's routes and API_KEYS' clients, served to the operators of
// ADMIN_API_KEYS (or ADMIN_API_KEY's one "admin", with a warning), its
// refused and throttled requests counted; nil when neither is set, so
// that its routes do not exist.
func (b *assembly) adminAPI() (http.Handler, error) {
	operators, from, err := b.cfg.adminKeys()
	if err != nil || operators == nil {
		return nil, err
	}
	store, ok := b.store.Store.(stores.Admin)
	if !ok {
		return nil, fmt.Errorf("%s is set but the store (%T) cannot be administered", from, b.store.Store)
	}
	if from == "ADMIN_API_KEY" {
		b.logger.Warn("ADMIN_API_KEY is one key for every operator: the key admin's log names whoever uses it \"admin\"; " +
			"give each operator a key of their own in ADMIN_API_KEYS and unset ADMIN_API_KEY")
	}
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "onceflow_admin_auth_failures_total",
		Help: "Requests to the key admin refused for a missing or wrong admin key.",
	})
	throttled := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "onceflow_admin_auth_throttled_total",
		Help: "Requests to the key admin refused, before their key was looked at, because their source had sent too many wrong keys.",
	})
	for _, c := range []prometheus.Collector{failures, throttled} {
		if err := b.reg.Register(c); err != nil {
			return nil, err
		}
	}
	cfg := admin.Config{Store: store, Handlers: b.parts.Routes.Names(), HTTPRoutes: b.parts.HTTP.IdempotentRoutes, Logger: b.logger,
		OnAuthFailure: failures.Inc, OnThrottled: throttled.Inc, Poison: b.poison, Outcomes: func() admin.Counts { return outcomeCounts(b.reg) }}
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
	return svc.Handler(operators)
}

// outcomeCounts reads onceflow_receiver_outcomes_total from reg, by scope
// (handler) and outcome; nil if it cannot be read.
func outcomeCounts(reg prometheus.Gatherer) admin.Counts {
	families, err := reg.Gather()
	if err != nil {
		return nil
	}
	counts := admin.Counts{}
	for _, f := range families {
		if f.GetName() != "onceflow_receiver_outcomes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var scope, outcome string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "scope":
					scope = l.GetValue()
				case "outcome":
					outcome = l.GetValue()
				}
			}
			if counts[scope] == nil {
				counts[scope] = map[string]float64{}
			}
			counts[scope][outcome] = m.GetCounter().GetValue()
		}
	}
	return counts
}
