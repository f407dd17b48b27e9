package traffic

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
)

// publishToBroker sends the duplicate demo's copies straight to the broker
// that TRANSPORT names: every copy is a new message (its own UUID) with the
// same payload and idempotency key.
func publishToBroker(ctx context.Context, cfg domain.Settings, opts PublishOptions, out io.Writer) error {
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
// TRANSPORT names, as another team's producer would, as payments of the
// client PUBLISH_API_KEY names (see [domain.Settings]). Its publish is safe
// for concurrent use.
type producer struct {
	domain.Producer
	topic       string
	client      string
	requestedAt time.Time
}

// openProducer connects to the broker; topic is where it publishes (after
// TOPIC_PREFIX), payments.requested when empty.
func openProducer(ctx context.Context, cfg domain.Settings, topic string) (*producer, error) {
	if topic == "" {
		topic = handlers.TopicPaymentRequested
	}
	p, err := cfg.OpenProducer(ctx, []string{topic})
	if err != nil {
		return nil, err
	}
	return &producer{Producer: p, topic: topic, client: cfg.Client, requestedAt: time.Now().UTC()}, nil
}

// publish sends one copy of pay: a new message (its own UUID) whose payload
// and idempotency key are the same for every copy, since requestedAt is the
// producer's, not the copy's.
func (p *producer) publish(ctx context.Context, pay handlers.Payment) error {
	msg, err := handlers.PaymentRequested{
		Client: p.client, PaymentID: pay.ID, CustomerID: pay.CustomerID, AmountCents: pay.AmountCents,
		Currency: pay.Currency, RequestedAt: p.requestedAt,
	}.Message()
	if err != nil {
		return err
	}
	msg.SetContext(ctx)
	return p.Publish(p.topic, msg)
}

// String says where the producer publishes: "<transport> topic <topic>".
func (p *producer) String() string {
	return fmt.Sprintf("%s topic %s", p.Producer, p.Topic(p.topic))
}
