package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/handlers"
)

// publishToBroker sends the duplicate demo's copies straight to the broker
// that TRANSPORT names: every copy is a new message (its own UUID) with the
// same payload and idempotency key.
func publishToBroker(ctx context.Context, cfg Config, opts PublishOptions, out io.Writer) error {
	if opts.Topic == "" {
		opts.Topic = handlers.TopicPaymentRequested
	}
	var pool *pgxpool.Pool
	if cfg.Transport == "sql" {
		var err error
		if pool, err = openPostgres(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns); err != nil {
			return err
		}
		defer pool.Close()
	}
	t, err := newTransport(ctx, cfg, pool, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer t.close()
	t = withTopicPrefix(t, cfg.TopicPrefix)

	run := uuid.NewString()[:8]
	requestedAt := time.Now().UTC()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i := range opts.Count {
		event := handlers.PaymentRequested{
			PaymentID: fmt.Sprintf("pay-%s-%d", run, i+1), CustomerID: fmt.Sprintf("cust-%d", i%10+1),
			AmountCents: int64(1000 + i), Currency: "EUR", RequestedAt: requestedAt,
		}
		for range 1 + opts.Duplicates {
			g.Go(func() error {
				msg, err := event.Message()
				if err != nil {
					return err
				}
				msg.SetContext(ctx)
				if err := t.publisher.Publish(opts.Topic, msg); err != nil {
					return fmt.Errorf("publishing %s: %w", event.PaymentID, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Fprintf(out, "sent %d messages: %d payments (pay-%s-1 .. pay-%s-%d) x %d copies, to %s topic %s%s\n",
		opts.Count*(1+opts.Duplicates), opts.Count, run, run, opts.Count, 1+opts.Duplicates,
		cfg.Transport, cfg.TopicPrefix, opts.Topic)
	fmt.Fprintf(out, "expect %d charges: see /v1/ledger/summary on the service\n", opts.Count)
	return nil
}
