package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores/memory"
	storepg "github.com/onceflow/onceflow/stores/postgres"
)

// Routes of the provider's API (net/http ServeMux patterns).
const (
	// RouteCharge makes a charge, behind the Idempotency-Key face.
	RouteCharge = "POST /charges"
	// RouteChargeCount counts the charges made: all of them, or those of
	// one payment (?payment_id=).
	RouteChargeCount = "GET /charges/count"
	// RouteReady answers 200 while the provider can charge: the
	// container image's health check asks it.
	RouteReady = "GET /readyz"
)

// Name names the provider's migrations: they are versioned in
// goose_db_version_provider, beside the records' goose_db_version.
const Name = "provider"

// Config configures a Provider. The zero value is ready to use: records
// and charges in memory.
type Config struct {
	// DB, when set, is the provider's own PostgreSQL database (or
	// schema, through the pool's search_path): New applies the records'
	// migrations and the provider's there, and each charge commits in
	// one transaction with its Idempotency-Key record. nil: memory.
	DB *pgxpool.Pool
	// TTL is how long the provider remembers a key and the charge it
	// answered it with: a repeat after that is charged again. Default
	// the receiver's, 24h.
	TTL time.Duration
	// Logger receives the provider's and its receiver's warnings. Default
	// slog.Default().
	Logger *slog.Logger
}

// Provider is the payment provider: an [http.Handler] serving its API.
// It is safe for concurrent use. Close it to stop what New started.
type Provider struct {
	book    book
	db      *pgxpool.Pool
	logger  *slog.Logger
	handler http.Handler
	closers []func() error
	once    sync.Once
}

// New returns a Provider on cfg. With cfg.DB it first applies the
// migrations there (concurrent callers take turns) and starts a sweeper of
// expired records, which Close stops.
func New(ctx context.Context, cfg Config) (_ *Provider, err error) {
	p := &Provider{db: cfg.DB, logger: cfg.Logger}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	defer func() {
		if err != nil {
			_ = p.Close()
		}
	}()
	rc := receiver.Config{TTL: cfg.TTL, Logger: p.logger}
	if cfg.DB == nil {
		store := memory.New(memory.Config{})
		p.closers = append(p.closers, store.Close)
		rc.Store, p.book = store, newMemoryBook()
	} else {
		store, err := p.openPostgres(ctx, cfg.DB)
		if err != nil {
			return nil, err
		}
		rc.Transactor = exactlyonce.Transactor{DB: cfg.DB, Store: store}
	}
	r, err := receiver.New(rc)
	if err != nil {
		return nil, err
	}
	p.handler = p.routes(idempotencykey.Middleware(r,
		// Every caller is one merchant: the payments service.
		idempotencykey.WithAnonymous(),
		// A request without a key is charged, every time.
		idempotencykey.WithOptionalKey(),
		// Its one caller is trusted; a quota would only slow it.
		idempotencykey.WithClientQuota(0, 0),
		idempotencykey.WithMaxRequestBody(MaxRequestBody),
	))
	return p, nil
}

// openPostgres migrates db and returns the records' store on it, with its
// sweeper running; the charges go to db too.
func (p *Provider) openPostgres(ctx context.Context, db *pgxpool.Pool) (*storepg.Store, error) {
	sqlDB := stdlib.OpenDBFromPool(db)
	defer sqlDB.Close()
	if err := migrations.Up(ctx, sqlDB); err != nil {
		return nil, fmt.Errorf("migrating the provider's records: %w", err)
	}
	if err := migrations.Up(ctx, sqlDB, migrations.Of(Name, Migrations())); err != nil {
		return nil, fmt.Errorf("migrating the provider's charges: %w", err)
	}
	store, err := storepg.New(db, storepg.Config{})
	if err != nil {
		return nil, err
	}
	sweepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		_ = storepg.NewSweeper(store, storepg.SweeperConfig{Logger: p.logger}).Run(sweepCtx)
	}()
	p.closers = append(p.closers, func() error { stop(); <-swept; return nil })
	p.book = postgresBook{db: db}
	return store, nil
}

// ServeHTTP serves the provider's API.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }

// Count returns how many charges the provider made: of payment paymentID,
// or of every payment when it is "".
func (p *Provider) Count(ctx context.Context, paymentID string) (int64, error) {
	return p.book.count(ctx, paymentID)
}

// Close stops what New started. It does not close Config.DB. Calling it
// again does nothing.
func (p *Provider) Close() error {
	var errs []error
	p.once.Do(func() {
		for i := len(p.closers) - 1; i >= 0; i-- {
			errs = append(errs, p.closers[i]())
		}
	})
	return errors.Join(errs...)
}

// ready reports whether the provider can charge: its database answers.
func (p *Provider) ready(ctx context.Context) error {
	if p.db == nil {
		return nil
	}
	return p.db.Ping(ctx)
}
