package receiver

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/stores"
)

// Defaults applied by [New] to zero Config fields.
const (
	DefaultLease = 30 * time.Second
	DefaultTTL   = 24 * time.Hour
	DefaultWait  = 5 * time.Second
)

// minLease is the shortest lease accepted: stores keep leases to the
// millisecond.
const minLease = time.Millisecond

// Config configures a Receiver. Its zero value is usable once Store (or,
// in transaction mode, Transactor) is set: [New] fills every other field
// with its default.
type Config struct {
	// Store keeps the idempotency records in lease mode. Required unless
	// Transactor is set, whose units bring their own.
	Store stores.Store

	// Lease is how long a claim is held without a heartbeat. While the
	// function runs, the lease is extended every Lease/3 (at most Lease/12
	// late). It must exceed the handler timeout, or a slow handler's key may
	// be taken over. At least 1ms. Default 30s.
	Lease time.Duration

	// TTL is how long completed records, and so their results, are kept.
	// Duplicates arriving later are processed again. Default 24h.
	TTL time.Duration

	// OnInProgress decides what happens when another owner holds the key.
	// Default Reject.
	OnInProgress InProgressPolicy

	// Wait bounds how long the Wait policy waits for the other owner to
	// finish. Default 5s.
	Wait time.Duration

	// OnStoreError decides what happens when the store is unavailable at
	// claim time. Default FailClosed.
	OnStoreError StoreErrorPolicy

	// Transactor, when set, selects transaction mode: each Execute claims,
	// runs and completes in one unit of work that it opens, through the
	// unit's store (see Transactor and Execute); Store is then not used.
	// Lease bounds how long a claim is held should a unit end without a
	// commit or rollback; no heartbeat runs. Default nil: lease mode.
	Transactor Transactor

	// Observer is told every outcome and store latency. Default: none.
	Observer Observer

	// Logger receives warnings about lost leases, failed releases and
	// unguarded processing, and every decision at debug level. Default
	// slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, gives every Execute call a span, and every
	// store call a span within it (see [Receiver.Execute]). Default nil: no
	// spans, at no cost.
	TracerProvider trace.TracerProvider
}

func (c *Config) setDefaults() {
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.OnInProgress == "" {
		c.OnInProgress = Reject
	}
	if c.Wait == 0 {
		c.Wait = DefaultWait
	}
	if c.OnStoreError == "" {
		c.OnStoreError = FailClosed
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c Config) validate() error {
	var errs []error
	if c.Store == nil && c.Transactor == nil {
		errs = append(errs, errors.New("missing store: set Store (lease mode) or Transactor (transaction mode)"))
	}
	if c.Lease < minLease {
		errs = append(errs, fmt.Errorf("lease %v must be at least %v", c.Lease, minLease))
	}
	if c.TTL < 0 {
		errs = append(errs, fmt.Errorf("ttl %v must be positive", c.TTL))
	}
	if c.Wait < 0 {
		errs = append(errs, fmt.Errorf("wait %v must be positive", c.Wait))
	}
	if _, err := ParseInProgressPolicy(string(c.OnInProgress)); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseStoreErrorPolicy(string(c.OnStoreError)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
