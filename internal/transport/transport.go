package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Transport is a broker as a router sees it: one publisher, and a
// subscriber per handler, so that each handler consumes independently (its
// own consumer group or queue) while replicas of the service share the
// work. Every topic it is given is prefixed with [Config.TopicPrefix].
type Transport struct {
	publisher message.Publisher
	// subscriber returns the subscriber for the named handler, holding up
	// to inFlight messages at once (at least 1).
	subscriber func(handler string, inFlight int) (message.Subscriber, error)
	close      func() error
	// ready reports whether the broker can be reached now; nil for the
	// in-process transport.
	ready func(context.Context) error
}

// New builds the transport cfg names, its defaults filled: it connects to
// the broker (retrying RabbitMQ's first connection for
// [Config.AMQPConnectTimeout]) and, on Kafka and NATS, creates
// [Config.Topics]. Its errors are one line each; see [URLError] and
// [ConnectError] for RabbitMQ's.
func New(ctx context.Context, cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	logger := watermill.NewSlogLogger(cfg.Logger)
	var (
		t   Transport
		err error
	)
	switch cfg.Kind {
	case GoChannel:
		t = newGoChannel(logger)
	case Kafka:
		t, err = newKafka(ctx, cfg, logger)
	case AMQP:
		t, err = newAMQP(ctx, cfg, logger)
	case SQL:
		t, err = newSQL(ctx, cfg, logger)
	case NATS:
		t, err = newNATS(ctx, cfg, logger)
	case RedisStream:
		t, err = newRedisStream(ctx, cfg, logger)
	default: // Validate admits only the kinds above
		err = errors.New("unreachable")
	}
	if err != nil {
		return nil, err
	}
	t.publisher = sharedPublisher{t.publisher}
	t = withTopicPrefix(t, cfg.TopicPrefix)
	return &t, nil
}

// Publisher is the transport's one publisher, safe for concurrent use; see
// [sharedPublisher] for why its Close does nothing.
func (t *Transport) Publisher() message.Publisher { return t.publisher }

// Subscriber returns a new subscriber consuming as handler: in its own
// consumer group or queue (see [Config.ConsumerGroup]), shared by every
// replica. Each of its subscriptions hands out up to inFlight messages at
// once, each acked or nacked on its own, in any order: a router runs them
// concurrently. A message is acknowledged to the broker only once the
// router acked it; a nacked one comes back; a subscription that ends (its
// context ended, its subscriber closed) hands back at once what it had
// not finished, and the subscriber's Close returns once its subscriptions'
// channels are closed. The SQL transport holds one message at a
// time whatever inFlight is (see newSQL). inFlight must be at least 1.
// On the in-process transport, closing a subscriber closes the transport's
// pub/sub (see inProcessSubscriber.Close). Safe for concurrent use; Close
// closes every subscriber returned.
func (t *Transport) Subscriber(handler string, inFlight int) (message.Subscriber, error) {
	if inFlight < 1 {
		return nil, fmt.Errorf("subscriber of %s: %d messages in flight, want at least 1", handler, inFlight)
	}
	return t.subscriber(handler, inFlight)
}

// Readiness returns the check of whether the broker answers now, within
// its context, on a connection that lasts (see amqpProbe): a check opens a
// new connection only after the last one failed. Nil for the in-process
// transport, which has nothing to reach. Safe for concurrent use.
func (t *Transport) Readiness() func(context.Context) error { return t.ready }

// Close closes the subscribers, then the publisher, then the connections.
// Call it after the router using the transport has stopped.
func (t *Transport) Close() error { return t.close() }
