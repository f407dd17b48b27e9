package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/transport"
)

// publishToBroker sends the duplicate demo's copies straight to the broker
// that TRANSPORT names: every copy is a new message (its own UUID) with the
// same payload and idempotency key.
func publishToBroker(ctx context.Context, cfg Config, opts PublishOptions, out io.Writer) error {
	p, err := openProducer(ctx, cfg, opts.Topic)
	if err != nil {
		return err
	}
	defer p.Close()
	run, err := sendCopies(ctx, opts, p.publish)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent %d messages: %d payments (pay-%s-1 .. pay-%s-%d) x %d copies, to %s\n",
		opts.Count*(1+opts.Duplicates), opts.Count, run, run, opts.Count, 1+opts.Duplicates, p)
	fmt.Fprintf(out, "expect %d charges: see /v1/ledger/summary on the service\n", opts.Count)
	return nil
}

// producer publishes PaymentRequested events straight to the broker
// TRANSPORT names, as another team's producer would. Its publish is safe
// for concurrent use.
type producer struct {
	cfg         Config
	topic       string
	requestedAt time.Time
	pool        *pgxpool.Pool // the sql transport's; nil for the others
	t           *transport.Transport
}

// openProducer connects to the broker; topic is where it publishes (after
// TOPIC_PREFIX), payments.requested when empty.
func openProducer(ctx context.Context, cfg Config, topic string) (*producer, error) {
	if topic == "" {
		topic = handlers.TopicPaymentRequested
	}
	p := &producer{cfg: cfg, topic: topic, requestedAt: time.Now().UTC()}
	if cfg.Transport == "sql" {
		var err error
		if p.pool, err = openPostgres(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns); err != nil {
			return nil, err
		}
	}
	t, err := openTransport(ctx, cfg, p.pool, []string{topic}, slog.New(slog.DiscardHandler))
	if err != nil {
		p.Close()
		return nil, err
	}
	p.t = t
	return p, nil
}

// publish sends one copy of pay: a new message (its own UUID) whose payload
// and idempotency key are the same for every copy, since requestedAt is the
// producer's, not the copy's.
func (p *producer) publish(ctx context.Context, pay handlers.Payment) error {
	msg, err := handlers.PaymentRequested{
		PaymentID: pay.ID, CustomerID: pay.CustomerID, AmountCents: pay.AmountCents,
		Currency: pay.Currency, RequestedAt: p.requestedAt,
	}.Message()
	if err != nil {
		return err
	}
	msg.SetContext(ctx)
	return p.t.Publisher().Publish(p.topic, msg)
}

// String says where the producer publishes: "<transport> topic <topic>".
func (p *producer) String() string {
	return fmt.Sprintf("%s topic %s%s", p.cfg.Transport, p.cfg.TopicPrefix, p.topic)
}

// Close disconnects from the broker.
func (p *producer) Close() error {
	var err error
	if p.t != nil {
		err = p.t.Close()
	}
	if p.pool != nil {
		p.pool.Close()
	}
	return err
}
