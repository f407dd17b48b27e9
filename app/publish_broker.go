package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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
	t, err := openTransport(ctx, cfg, pool, []string{opts.Topic}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer t.Close()

	requestedAt := time.Now().UTC()
	run, err := sendCopies(ctx, opts, func(ctx context.Context, p handlers.Payment) error {
		msg, err := handlers.PaymentRequested{
			PaymentID: p.ID, CustomerID: p.CustomerID, AmountCents: p.AmountCents,
			Currency: p.Currency, RequestedAt: requestedAt,
		}.Message()
		if err != nil {
			return err
		}
		msg.SetContext(ctx)
		return t.Publisher().Publish(opts.Topic, msg)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent %d messages: %d payments (pay-%s-1 .. pay-%s-%d) x %d copies, to %s topic %s%s\n",
		opts.Count*(1+opts.Duplicates), opts.Count, run, run, opts.Count, 1+opts.Duplicates,
		cfg.Transport, cfg.TopicPrefix, opts.Topic)
	fmt.Fprintf(out, "expect %d charges: see /v1/ledger/summary on the service\n", opts.Count)
	return nil
}
