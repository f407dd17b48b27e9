package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5/pgxpool"
)

// consumerGroup names the consumer group (Kafka, SQL) or queue (AMQP) of a
// handler: TOPIC_PREFIX, SERVICE_NAME and the handler name. Every replica of
// the service shares it, so they split the handler's work, while each
// handler consumes every message of its topic; environments that share a
// broker under different prefixes never join each other's groups.
func consumerGroup(cfg Config, handler string) string {
	return cfg.TopicPrefix + cfg.ServiceName + "." + handler
}

// transport is a broker as the router sees it: one publisher, and a
// subscriber per handler so that each handler consumes independently (its
// own consumer group or queue) while replicas of the service share the work.
type transport struct {
	publisher message.Publisher
	// subscriber returns the subscriber for the named handler.
	subscriber func(handler string) (message.Subscriber, error)
	close      func() error
	// ready reports whether the broker can be reached now (/readyz); nil
	// for the in-process transport.
	ready brokerCheck
}

// newTransport builds the transport TRANSPORT names. pool is the
// PostgreSQL pool when DATABASE_URL is set, else nil. topics are those the
// transport creates at start-up where a broker needs that (Kafka).
func newTransport(ctx context.Context, cfg Config, pool *pgxpool.Pool, topics []string, logger *slog.Logger) (transport, error) {
	wlog := watermill.NewSlogLogger(logger)
	var (
		t   transport
		err error
	)
	switch cfg.Transport {
	case "gochannel":
		t = newGoChannel(wlog)
	case "kafka":
		t, err = newKafka(ctx, cfg, topics, wlog)
	case "amqp":
		t, err = newAMQP(ctx, cfg, wlog)
	case "sql":
		t, err = newSQL(ctx, cfg, pool, wlog)
	default: // Config.Validate admits only the transports above
		err = fmt.Errorf("TRANSPORT=%q is not supported", cfg.Transport)
	}
	if err != nil {
		return transport{}, err
	}
	switch cfg.Transport {
	case "kafka":
		t.ready = kafkaAnswers(cfg.KafkaBrokers)
	case "sql":
		t.ready = postgresAnswers(pool)
	}
	t.publisher = sharedPublisher{t.publisher}
	return t, nil
}

// sharedPublisher is the one publisher of the HTTP API, the handlers and the
// poison queue. The router closes a handler's publisher when that handler
// stops, while others may still publish through it (sarama panics on a send
// after Close; watermill-sql's Close must not run during a Publish; closing
// the in-process pub/sub ends every subscription), so its Close does
// nothing: the transport's close closes it, after the router has stopped.
type sharedPublisher struct{ message.Publisher }

// Close does nothing; see sharedPublisher.
func (sharedPublisher) Close() error { return nil }

// newGoChannel is the in-process transport: every handler subscribes to the
// same Go channel pub/sub. Messages live only in this process.
//
// Publish blocks until every subscriber has acked the message. That is the
// transport's backpressure: without it each message is delivered on its own
// goroutine, so a burst of thousands runs at once, exhausts the database
// pool, times out and is nacked and resent at once — a livelock. Blocking
// bounds the work in flight by the number of publishers, as a real broker's
// prefetch does; POST /v1/payments then answers once the payment is handled.
func newGoChannel(logger watermill.LoggerAdapter) transport {
	ps := gochannel.NewGoChannel(gochannel.Config{
		OutputChannelBuffer:            256,
		BlockPublishUntilSubscriberAck: true,
	}, logger)
	return transport{
		publisher:  ps,
		subscriber: func(string) (message.Subscriber, error) { return ps, nil },
		close:      ps.Close,
	}
}
