package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// messageBroker is what the service needs of a transport
// ([broker.Transport]):
// one publisher shared by the API, the handlers and the poison queue; a
// subscriber per handler, holding up to inFlight messages at once; the
// check behind /readyz (nil when there is no broker to reach); and Close,
// once the router has stopped.
type messageBroker interface {
	Publisher() message.Publisher
	Subscriber(handler string, inFlight int) (message.Subscriber, error)
	Readiness() func(context.Context) error
	Close() error
}

var _ messageBroker = (*broker.Transport)(nil)

// openTransport connects to the broker TRANSPORT names; pool is the
// PostgreSQL pool when DATABASE_URL is set, else nil. topics are those the
// transport creates at start-up where a broker needs that (Kafka).
func openTransport(ctx context.Context, cfg Config, pool *pgxpool.Pool, topics []string, logger *slog.Logger) (*broker.Transport, error) {
	tc := cfg.transportConfig(pool, topics, logger)
	if err := cfg.secureTransport(&tc); err != nil {
		return nil, err
	}
	if cfg.Transport == transport.Kafka && cfg.KafkaSASLMechanism == "PLAIN" && !cfg.KafkaTLS {
		logger.Warn("KAFKA_SASL_MECHANISM=PLAIN without KAFKA_TLS=true sends the Kafka password in clear on every connection")
	}
	t, err := transport.New(ctx, tc)
	if err != nil {
		return nil, cfg.transportError(ctx, err)
	}
	return t, nil
}

// transportConfig is the transport's part of the configuration. The sql
// transport resends a nacked message at the pace of the router's retries
// at their ceiling, and waits for an ack longer than the router may spend
// on one delivery, so that a message still being retried is never handed
// out twice. Kafka and NATS key messages by the receiver's idempotency
// key, and the sql transport's consumer transactions are transaction
// mode's.
func (c Config) transportConfig(pool *pgxpool.Pool, topics []string, logger *slog.Logger) transport.Config {
	_, streamURL := c.redisStream()
	return transport.Config{
		Kind:               c.Transport,
		ServiceName:        c.ServiceName,
		TopicPrefix:        c.TopicPrefix,
		Topics:             topics,
		KeyMetadata:        consume.MetadataKey,
		KafkaBrokers:       c.KafkaBrokers,
		KafkaPartitions:    c.KafkaPartitions,
		AMQPURL:            c.AMQPURL,
		AMQPConnectTimeout: c.AMQPConnectTimeout,
		NATSURL:            c.NATSURL,
		NATSMaxAge:         c.NATSMaxAge,
		RedisStreamURL:     streamURL,
		RedisStreamMaxLen:  c.RedisStreamMaxLen,
		Pool:               pool,
		SQLPollInterval:    c.SQLPollInterval,
		SQLBeginner:        exactlyonce.ConsumerBeginner,
		Redelivery:         c.redelivery(),
		Logger:             logger,
	}
}

// redisStream is the variable the redisstream transport's URL comes from
// and its value: REDIS_STREAM_URL, or REDIS_URL when that is unset.
func (c Config) redisStream() (name, url string) {
	if c.RedisStreamURL != "" {
		return "REDIS_STREAM_URL", c.RedisStreamURL
	}
	return "REDIS_URL", c.RedisURL
}

// transportError names the environment variables behind err, a transport
// that failed to start, with the URLs' passwords masked.
func (c Config) transportError(ctx context.Context, err error) error {
	var (
		urlErr  *broker.URLError
		connErr *broker.ConnectError
	)
	switch {
	case c.Transport == transport.Kafka:
		return fmt.Errorf("KAFKA_BROKERS=%s: %w", strings.Join(c.KafkaBrokers, ","), err)
	case c.Transport == transport.NATS:
		return fmt.Errorf("NATS_URL=%s: %w", redact(c.NATSURL), err)
	case c.Transport == transport.RedisStream:
		name, url := c.redisStream()
		return fmt.Errorf("%s=%s: %w", name, redact(url), err)
	case errors.As(err, &urlErr):
		return fmt.Errorf("AMQP_URL=%s is not an AMQP URI: %v", redact(c.AMQPURL), urlErr.Err)
	case errors.As(err, &connErr):
		return fmt.Errorf("AMQP_URL=%s: no connection to RabbitMQ within AMQP_CONNECT_TIMEOUT=%v: %w",
			redact(c.AMQPURL), c.AMQPConnectTimeout, connErr.Err)
	case c.Transport == transport.AMQP && ctx.Err() != nil:
		return fmt.Errorf("connecting to RabbitMQ at AMQP_URL=%s: %w", redact(c.AMQPURL), ctx.Err())
	}
	return err
}

// AMQPDeclared lists the durable exchanges and queues a service with c's
// TOPIC_PREFIX and SERVICE_NAME declares on RabbitMQ for routes, its
// poison log and, when a route requeues, its requeuer: an exchange per
// topic and a queue per handler. They outlive
// the service; a test, or an environment taken down, deletes them.
func (c Config) AMQPDeclared(routes domain.Routes) (exchanges, queues []string) {
	names := broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}
	all := withOwnReaders(routes)
	for _, topic := range all.Topics() {
		exchanges = append(exchanges, c.TopicPrefix+topic)
	}
	for _, r := range all {
		queues = append(queues, names.AMQPQueue(r.Consumes, r.Name))
	}
	return exchanges, queues
}

// redelivery is when the brokers that redeliver by time, and the outbox
// relay, hand a message out again: a nacked one at the ceiling of the
// in-process retry backoff, an unacknowledged one once the longest a
// delivery can spend in the router has passed (every attempt's timeout
// plus the backoff between attempts).
func (c Config) redelivery() broker.Redelivery {
	return broker.Redelivery{
		AckDeadline:    time.Duration(c.RetryMax+1) * (c.HandlerTimeout + c.retryMaxInterval()),
		ResendInterval: c.retryMaxInterval(),
	}
}

// withOwnReaders is routes with the service's own readers of topics: the
// poison log and, when a route requeues, the requeuer.
func withOwnReaders(routes domain.Routes) domain.Routes {
	all := append(slices.Clip(routes), domain.Route{Name: poisonLogHandler, Consumes: PoisonTopic})
	if routes.Requeue() {
		all = append(all, domain.Route{Name: requeueHandler, Consumes: RequeueTopic})
	}
	return all
}
