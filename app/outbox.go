package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/transport"
	"github.com/onceflow/onceflow/middleware"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Names of the transactional outbox (DEDUP_MODE=transaction with a broker
// other than sql): the SQL topic it is written to, after TOPIC_PREFIX, and
// the relay's handler, which names its consumer group.
const (
	outboxTopic   = "outbox"
	outboxHandler = "outbox_relay"
)

// outbox writes messages in the transaction of the unit of work found in a
// context (see postgres.TxFromContext), so that they commit or roll back with it.
// With TRANSPORT=sql they go straight to their topic's table; with any
// other transport to the outbox table, enveloped with their topic
// (Watermill's forwarder format), from which the relay publishes them to
// the broker. Outside a unit of work they are published on the transport.
//
// The topic tables must exist before a transaction writes to them (a
// publisher on a transaction cannot create them): every topic written here
// is subscribed by this service, and the subscribers create them at
// start-up, the relay's before the router's.
type outbox struct {
	direct bool
	prefix string
	// outputs is the topic of each handler's produced messages
	// (domain.Routes.Outputs).
	outputs   map[string]string
	publisher message.Publisher // the transport's, already prefixed
	logger    *slog.Logger
	// tracing gives each message written a publish span; nil when tracing
	// is off.
	tracing *middleware.Tracing
}

// publish writes msgs to topic in the unit of work that ctx carries, each
// in a publish span when tracing is on.
func (o outbox) publish(ctx context.Context, topic string, msgs ...*message.Message) error {
	if o.tracing == nil {
		return o.send(ctx, topic, msgs...)
	}
	return o.tracing.Publisher(publishFunc(func(topic string, msgs ...*message.Message) error {
		return o.send(ctx, topic, msgs...)
	})).Publish(topic, msgs...)
}

// send is publish without the spans.
func (o outbox) send(ctx context.Context, topic string, msgs ...*message.Message) error {
	tx, ok := postgres.TxFromContext(ctx)
	if !ok {
		return o.publisher.Publish(topic, msgs...)
	}
	pub, err := transport.NewSQLTxPublisher(tx, o.logger)
	if err != nil {
		return err
	}
	if o.direct {
		return pub.Publish(o.prefix+topic, msgs...)
	}
	return forwarder.NewPublisher(pub, forwarder.PublisherConfig{
		ForwarderTopic: o.prefix + outboxTopic,
	}).Publish(topic, msgs...)
}

// write is the middleware.Outbox of the router's handlers.
func (o outbox) write(ctx context.Context, handler string, msgs []*message.Message) error {
	topic, ok := o.outputs[handler]
	if !ok {
		return fmt.Errorf("handler %q produced messages but has no output topic", handler)
	}
	return o.publish(ctx, topic, msgs...)
}

// outboxPublisher publishes through the outbox within the context of the
// first message: the HTTP API's messages, published while its request runs
// in a unit of work, commit with the request's ledger writes.
type outboxPublisher struct{ o outbox }

func (p outboxPublisher) Publish(topic string, msgs ...*message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	return p.o.publish(msgs[0].Context(), topic, msgs...)
}

func (outboxPublisher) Close() error { return nil }

// publishFunc is a [message.Publisher] of one function, with nothing to
// close.
type publishFunc func(topic string, msgs ...*message.Message) error

func (f publishFunc) Publish(topic string, msgs ...*message.Message) error { return f(topic, msgs...) }

func (publishFunc) Close() error { return nil }

// newRelay is Watermill's forwarder reading the outbox table with the sql
// transport's subscriber ([transport.NewSQLSubscriber]) on a consumer pool
// of its own (returned, for the caller to close after the relay) and
// publishing each message to its topic on the transport. A message whose
// publish fails is nacked and read again (after Config.retryMaxInterval),
// in order, so that during a broker outage messages wait in the outbox and
// are all delivered once it is back.
func newRelay(ctx context.Context, cfg Config, pool *pgxpool.Pool, publisher message.Publisher,
	logger *slog.Logger) (*forwarder.Forwarder, *pgxpool.Pool, error) {
	if pool == nil {
		return nil, nil, errors.New("the outbox needs DATABASE_URL")
	}
	consumers, err := transport.OpenConsumerPool(ctx, pool)
	if err != nil {
		return nil, nil, err
	}
	sub, err := transport.NewSQLSubscriber(consumers, cfg.transportConfig(pool, nil, logger), outboxHandler)
	if err != nil {
		consumers.Close()
		return nil, nil, err
	}
	f, err := forwarder.NewForwarder(sub, publisher, watermill.NewSlogLogger(logger), forwarder.Config{
		ForwarderTopic: cfg.TopicPrefix + outboxTopic,
		HandlerName:    outboxHandler,
		CloseTimeout:   cfg.ShutdownTimeout,
	})
	if err != nil {
		_ = sub.Close()
		consumers.Close()
		return nil, nil, fmt.Errorf("creating the outbox relay: %w", err)
	}
	return f, consumers, nil
}
