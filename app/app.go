package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// App is one running instance of the service. Create it with New, run it
// with Run, and release it with Close. Several Apps can live in one process
// (the end-to-end tests run two): nothing is global, not even metrics.
type App struct {
	cfg       Config
	logger    *slog.Logger
	listener  net.Listener
	server    *http.Server
	ops       *http.Server // INTERNAL_ADDR's /metrics, probes and key admin; nil when unset
	opsListen net.Listener
	router    *message.Router
	transport messageBroker
	store     idempotencyStore
	pool      *pgxpool.Pool
	sweeper   *postgres.Sweeper
	relay     *forwarder.Forwarder
	closers   []func() error
}

// New connects to every backend the configuration names, applies the
// migrations, the service's and the domain's (or, with
// MIGRATE_ON_START=false, refuses a schema that lacks some), opens the
// domain d (which reads settings of its own only from an environment
// given by [domain.Domain.WithEnviron], as Serve does), assembles the router with its routes and binds the HTTP
// listener with its API (so Addr is known before Run; HTTP_ADDR may use
// port 0). It refuses to start without API_KEYS unless
// ALLOW_ANONYMOUS=true, and then warns. On error, whatever it opened is
// closed again.
func New(ctx context.Context, cfg Config, d domain.Domain, logger *slog.Logger) (*App, error) {
	return newApp(ctx, cfg, d, logger, seams{})
}

// seams lets tests wrap parts of the App. The zero value changes nothing.
type seams struct {
	// store wraps the idempotency store, under the local cache.
	store func(stores.Store) stores.Store
	// spans, when set, receives every span as it ends, whatever
	// OTEL_EXPORTER_OTLP_ENDPOINT says.
	spans sdktrace.SpanExporter
}

// Addr is the address the HTTP server listens on.
func (a *App) Addr() string { return a.listener.Addr().String() }

// InternalAddr is the address the internal HTTP server (INTERNAL_ADDR)
// listens on; "" when there is none.
func (a *App) InternalAddr() string {
	if a.opsListen == nil {
		return ""
	}
	return a.opsListen.Addr().String()
}

// Run consumes messages and serves HTTP until ctx ends, then shuts down
// gracefully: it stops taking HTTP requests and waits for those in flight,
// then closes the router, which waits for in-flight messages (bounded by
// SHUTDOWN_TIMEOUT). It returns nil after a clean shutdown.
func (a *App) Run(ctx context.Context) error {
	// The router gets its own context so that it outlives the HTTP server:
	// requests still in flight at shutdown may publish work.
	routerCtx, stopRouter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRouter()
	if a.relay != nil {
		// Before the router: its subscriber creates the outbox table.
		relayDone := make(chan error, 1)
		go func() { relayDone <- a.relay.Run(routerCtx) }()
		defer func() { _ = a.relay.Close() }()
		select {
		case <-a.relay.Running():
		case err := <-relayDone:
			return fmt.Errorf("starting the outbox relay: %w", err)
		}
	}
	routerDone := make(chan error, 1)
	go func() { routerDone <- a.router.Run(routerCtx) }()
	select {
	case <-a.router.Running():
	case err := <-routerDone:
		return fmt.Errorf("starting router: %w", err)
	}

	if a.sweeper != nil {
		go func() { _ = a.sweeper.Run(routerCtx) }()
	}
	serveDone := make(chan error, 2)
	go func() { serveDone <- a.server.Serve(a.listener) }()
	if a.ops != nil {
		go func() { serveDone <- a.ops.Serve(a.opsListen) }()
	}
	a.logger.Info("serving", "addr", a.Addr(), "internal_addr", a.InternalAddr(), "transport", a.cfg.Transport, "store", a.cfg.Store)

	var errs []error
	routerStopped := false
	select {
	case <-ctx.Done():
	case err := <-serveDone:
		errs = append(errs, fmt.Errorf("serving HTTP: %w", err))
	case err := <-routerDone:
		routerStopped = true
		errs = append(errs, fmt.Errorf("router stopped unexpectedly (error: %v)", err))
	}

	a.logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := a.server.Shutdown(shutdownCtx); err != nil {
		errs = append(errs, fmt.Errorf("shutting down HTTP: %w", err))
	}
	if a.ops != nil {
		if err := a.ops.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("shutting down the internal HTTP server: %w", err))
		}
	}
	stopRouter()
	if !routerStopped {
		if err := <-routerDone; err != nil {
			errs = append(errs, fmt.Errorf("closing router: %w", err))
		}
	}
	a.logger.Info("stopped")
	return errors.Join(errs...)
}

// Close releases the transport, the store and the database pool, in the
// reverse order of their opening. Call it after Run returns.
func (a *App) Close() error {
	var err error
	for i := len(a.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, a.closers[i]())
	}
	a.closers = nil
	for _, l := range []net.Listener{a.listener, a.opsListen} {
		if l != nil {
			_ = l.Close()
		}
	}
	return err
}
