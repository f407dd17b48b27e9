package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware"
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
	router    *message.Router
	transport transport
	store     idempotencyStore
	pool      *pgxpool.Pool
	sweeper   *postgres.Sweeper
	relay     *forwarder.Forwarder
	closers   []func() error
}

// New connects to every backend the configuration names, applies the
// migrations, assembles the router and binds the HTTP listener (so Addr is
// known before Run; HTTP_ADDR may use port 0). On error, whatever it opened
// is closed again.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*App, error) {
	return newApp(ctx, cfg, logger, seams{})
}

// seams lets tests wrap parts of the App, such as the ledger to inject a
// fault after a write. The zero value changes nothing.
type seams struct {
	ledger func(handlers.Ledger) handlers.Ledger
}

func newApp(ctx context.Context, cfg Config, logger *slog.Logger, sm seams) (_ *App, err error) {
	a := &App{cfg: cfg, logger: logger}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	logger.Info("starting", "config", cfg)

	if cfg.DatabaseURL != "" {
		if a.pool, err = openPostgres(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() error { a.pool.Close(); return nil })
		if err = migrate(ctx, a.pool); err != nil {
			return nil, err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var rdb redis.UniversalClient
	if cfg.Store == "redis" {
		if rdb, err = openRedis(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if a.store, err = newStore(cfg, a.pool, rdb); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.store.close)
	if rdb != nil {
		if err = checkRedisDurability(ctx, cfg, rdb, reg, logger); err != nil {
			return nil, err
		}
	}
	if a.store.pg != nil {
		a.sweeper = postgres.NewSweeper(a.store.pg, postgres.SweeperConfig{Logger: logger})
	}

	ledger := withChaos(newLedger(a.pool), cfg)
	if sm.ledger != nil {
		ledger = sm.ledger(ledger)
	}
	routes := handlers.NewMessageHandlers(ledger, logger).Routes()
	if err = checkRoutes(routes); err != nil {
		return nil, err
	}

	if a.transport, err = newTransport(ctx, cfg, a.pool, append(routes.Topics(), PoisonTopic), logger); err != nil {
		return nil, err
	}
	a.transport = withTopicPrefix(a.transport, cfg.TopicPrefix)
	a.closers = append(a.closers, a.transport.close)

	observer, err := middleware.NewPrometheusObserver(reg)
	if err != nil {
		return nil, err
	}
	var (
		transactor middleware.Transactor
		ob         middleware.Outbox
		publisher  = a.transport.publisher
	)
	if cfg.DedupMode == "transaction" {
		transactor = pgTransactor{pool: a.pool, store: a.store.pg}
		wlog := watermill.NewSlogLogger(logger)
		o := outbox{direct: cfg.Transport == "sql", prefix: cfg.TopicPrefix, outputs: routes.Outputs(),
			publisher: a.transport.publisher, logger: wlog}
		ob, publisher = o.write, outboxPublisher{o}
		if !o.direct {
			var consumers *pgxpool.Pool
			if a.relay, consumers, err = newRelay(ctx, cfg, a.pool, a.transport.publisher, wlog); err != nil {
				return nil, err
			}
			a.closers = append(a.closers, func() error { consumers.Close(); return nil })
		}
	}
	receiver, err := middleware.NewReceiver(middleware.Config{
		Store:        a.store,
		Transactor:   transactor,
		Lease:        cfg.DedupLease,
		TTL:          cfg.DedupTTL,
		OnInProgress: middleware.InProgressPolicy(cfg.DedupOnInProgress),
		Wait:         cfg.DedupWait,
		OnStoreError: middleware.StoreErrorPolicy(cfg.DedupOnStoreError),
		Observer:     observer,
		Logger:       logger,
	})
	if err != nil {
		return nil, err
	}
	poison, err := newPoisonLog(reg, logger)
	if err != nil {
		return nil, err
	}

	if a.router, err = newRouter(cfg, a.transport, receiver, ob, routes, poison, logger); err != nil {
		return nil, err
	}
	api := handlers.NewHTTP(ledger, publisher, logger)
	if a.server, err = newHTTPServer(cfg, api, receiver, a.router, a.store, a.transport.ready, reg, logger); err != nil {
		return nil, err
	}
	if a.listener, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("HTTP_ADDR=%q: %w", cfg.HTTPAddr, err)
	}
	return a, nil
}

// Addr is the address the HTTP server listens on.
func (a *App) Addr() string { return a.listener.Addr().String() }

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
	serveDone := make(chan error, 1)
	go func() { serveDone <- a.server.Serve(a.listener) }()
	a.logger.Info("serving", "addr", a.Addr(), "transport", a.cfg.Transport, "store", a.cfg.Store)

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
	if a.listener != nil {
		_ = a.listener.Close()
	}
	return err
}
