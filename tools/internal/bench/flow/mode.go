package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Mode is how the receiver guards a handler on the sql transport.
type Mode string

const (
	// LeaseMode claims and completes in the PostgreSQL store, each its own
	// statement; the handler's effect and its produced message are written
	// on their own (DEDUP_MODE=lease).
	LeaseMode Mode = "lease"
	// TransactionMode claims, runs the effect, writes the produced message
	// to its topic's table and completes in one transaction, a savepoint of
	// the transaction in which the message is consumed
	// (DEDUP_MODE=transaction).
	TransactionMode Mode = "transaction"
)

// ModeOptions configures a [ModeBench].
type ModeOptions struct {
	// PostgresURL is a postgres:// URL; the bench works in a schema of its
	// own there, migrated as the service migrates its own. Required.
	PostgresURL string
	// Messages is the number of unique messages per round. Default
	// DefaultMessages.
	Messages int
	// Logger receives the transport's and routers' logs; nil discards them.
	Logger *slog.Logger
}

// ModeBench measures the sql transport's throughput with the receiver in
// lease mode against transaction mode. Each message's handler has one
// effect (a row inserted) and produces one message, as the test domain's
// charge route does.
type ModeBench struct {
	opts   ModeOptions
	schema *schema
	store  *postgres.Store
}

// effectsTable holds one row per handled message: the handler's effect.
const effectsTable = "bench_effects"

// NewModeBench creates the bench's schema, migrates it and adds the effects
// table. The caller closes the bench.
func NewModeBench(ctx context.Context, opts ModeOptions) (*ModeBench, error) {
	if opts.PostgresURL == "" {
		return nil, errors.New("missing PostgreSQL URL")
	}
	if opts.Messages == 0 {
		opts.Messages = DefaultMessages
	}
	if opts.Messages < 0 {
		return nil, fmt.Errorf("messages %d must be positive", opts.Messages)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := openSchema(ctx, opts.PostgresURL, "bench_mode_")
	if err != nil {
		return nil, err
	}
	b := &ModeBench{opts: opts, schema: s}
	if err := b.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.close(ctx))
	}
	return b, nil
}

func (b *ModeBench) prepare(ctx context.Context) error {
	if err := migrations.UpURL(ctx, b.schema.url); err != nil {
		return fmt.Errorf("migrating the bench schema: %w", err)
	}
	if _, err := b.schema.pool.Exec(ctx, "CREATE TABLE "+effectsTable+" (key text PRIMARY KEY)"); err != nil {
		return fmt.Errorf("creating the effects table: %w", err)
	}
	var err error
	b.store, err = postgres.New(b.schema.pool, postgres.Config{Unbatched: true})
	return err
}

// Round publishes Messages messages to a fresh topic of the sql transport
// and consumes them through one router in mode, returning the messages
// acked per second from the first delivery to the last ack.
func (b *ModeBench) Round(ctx context.Context, mode Mode) (float64, error) {
	tl, _, err := b.round(ctx, mode)
	if err != nil {
		return 0, err
	}
	return tl.rate(), nil
}

// Close drops the bench's schema.
func (b *ModeBench) Close() error { return b.schema.close(context.Background()) }
