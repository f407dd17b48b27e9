package testdomain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

// Option changes the domain that Domain returns.
type Option func(*options)

type options struct {
	middleware []message.HandlerMiddleware
}

// WithMiddleware puts m around the function of every message route,
// inside the receiver, where a fault after a handler's effects is what a
// crash between an effect and its record looks like; it also serves to
// time or count the functions. The first given is the outermost.
func WithMiddleware(m message.HandlerMiddleware) Option {
	return func(o *options) { o.middleware = append(o.middleware, m) }
}

// Domain is the test domain, as the service runs it: its routes and API on
// a [PostgresLedger] when the service has a database (DATABASE_URL), a
// [MemoryLedger] otherwise; charging the provider at ProviderSetting, or
// one it starts in process; its migrations, named Name; ErrMalformed and
// ErrRefused as the errors no redelivery fixes (ErrMalformed's parked as
// malformed); and the command send.
func Domain(opts ...Option) domain.Domain {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return domain.Domain{
		Name:       Name,
		Migrations: Migrations(),
		Permanent:  func(err error) bool { return errors.Is(err, ErrMalformed) || errors.Is(err, ErrRefused) },
		Malformed:  func(err error) bool { return errors.Is(err, ErrMalformed) },
		Open:       func(ctx context.Context, deps domain.Deps) (*domain.Parts, error) { return open(ctx, deps, o) },
		Commands:   map[string]domain.Command{"send": sendCommand},
	}
}

func open(ctx context.Context, deps domain.Deps, o options) (*domain.Parts, error) {
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var ledger Ledger = NewMemoryLedger()
	if deps.DB != nil {
		ledger = NewPostgresLedger(deps.DB)
	}
	charge, closeCharger, err := openCharger(ctx, deps.Getenv(ProviderSetting), logger)
	if err != nil {
		return nil, err
	}
	h := handlers{ledger: ledger, charge: charge, logger: logger}
	routes, err := withModes(h.routes(o.middleware), deps.Getenv(ModesSetting))
	if err != nil {
		_ = closeCharger()
		return nil, err
	}
	return &domain.Parts{Routes: routes, HTTP: API(ledger, deps.Publisher, logger), Close: closeCharger}, nil
}

// withModes is routes with the modes that modes, ModesSetting's value,
// gives them.
func withModes(routes domain.Routes, modes string) (domain.Routes, error) {
	if strings.TrimSpace(modes) == "" {
		return routes, nil
	}
	for pair := range strings.SplitSeq(modes, ",") {
		name, mode, ok := strings.Cut(strings.TrimSpace(pair), "=")
		i := slices.IndexFunc(routes, func(r domain.Route) bool { return r.Name == name })
		if !ok || i < 0 {
			return nil, fmt.Errorf("%s: %q is not route=mode for a route of %v", ModesSetting, pair, routes.Names())
		}
		routes[i].Mode = domain.Mode(mode)
	}
	return routes, nil
}

// openCharger returns what charges at the provider at raw, its base URL,
// or at one it starts in process when raw is empty, and what releases it.
// Every charge is sent with the effect key of its run
// ([idempotencykey.EffectKeys]).
func openCharger(ctx context.Context, raw string, logger *slog.Logger) (chargeFunc, func() error, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64 // one per charge in flight, kept for the next
	hc := &http.Client{Transport: idempotencykey.EffectKeys(transport)}
	release := func() error { transport.CloseIdleConnections(); return nil }
	if raw == "" {
		p, err := provider.Start(ctx, provider.Config{Logger: logger.With("component", "testdomain_provider")})
		if err != nil {
			return nil, nil, err
		}
		raw, release = p.URL, func() error { transport.CloseIdleConnections(); return p.Close() }
	} else if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The value is not shown: it may hold a password.
		return nil, nil, fmt.Errorf("%s is not the provider's base URL, such as http://127.0.0.1:8090", ProviderSetting)
	}
	charge := func(ctx context.Context, ref string, amount int64) (string, error) {
		return provider.Charge(ctx, hc, raw, ref, amount)
	}
	return charge, release, nil
}
