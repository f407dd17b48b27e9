package amqp

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/transport/broker"
)

// preset is the Watermill preset of the RabbitMQ transport, and with it
// the message contract for producers outside this service: a producer that
// publishes with amqp.NewDurablePubSubConfig(url, nil) from
// watermill-amqp/v3 feeds onceflow as it is.
//
//   - Exchange: one per topic, named after it (TopicPrefix + topic, e.g.
//     "orders.placed"), type fanout, durable, not auto-deleted, no
//     arguments; routing key "". Declaring it with other settings fails
//     with PRECONDITION_FAILED.
//   - Queue: one per handler, TopicPrefix + topic + "_" + the consumer
//     group (TopicPrefix + ServiceName + "." + handler; without a prefix
//     e.g. "orders.placed_onceflow.ship_order"), durable, shared
//     by every replica of the service. Queues are declared
//     when the service starts: a message published to an exchange that has
//     no queue yet is dropped by RabbitMQ.
//   - Message: the body is the payload; each metadata field is a header of
//     the same name holding a string (other header values are read as
//     strings, see stringHeaders); header "_watermill_message_uuid" holds
//     the Watermill UUID; delivery mode persistent. The idempotency key is
//     header "idempotency_key", or else the UUID.
//   - Consuming: each replica of a handler holds its in-flight count of
//     messages, through as many consumers of the handler's queue, each on
//     a channel of its own with a prefetch of 1 (see subscriber). A
//     nacked message, such as a copy whose original is still in progress
//     elsewhere, is requeued and delivered again, with metadata
//     "_watermill_amqp_redelivered" = "true"; so is every message a
//     subscriber held when it closed.
//   - Publishing: with publisher confirms, so Publish returns, and the API
//     answers 202, only once RabbitMQ has taken the message (a persistent
//     message on a durable queue: once it is on disk), on channels kept
//     open across publishes and reopened after a connection loss (see
//     confirmingPublisher).
//
// queueSuffix is the handler's consumer group for a subscriber and "" for
// the publisher, which needs no queue.
func preset(amqpURL, queueSuffix string) wmamqp.Config {
	var queueName wmamqp.QueueNameGenerator
	if queueSuffix != "" {
		queueName = wmamqp.GenerateQueueNameTopicNameWithSuffix(queueSuffix)
	}
	c := wmamqp.NewDurablePubSubConfig(amqpURL, queueName)
	c.Consume.Qos.PrefetchCount = 1
	c.Publish.ConfirmDelivery = true
	c.Marshaler = wmamqp.DefaultMarshaler{PreprocessDelivery: stringHeaders}
	return c
}

// stringHeaders turns header values that are not strings into strings. The
// Watermill marshaler refuses a message with such a header (a number from a
// producer outside Watermill, the x-death table of a dead-letter exchange),
// and the subscriber then nacks and requeues it forever, stalling the queue.
func stringHeaders(d amqp091.Delivery) amqp091.Delivery {
	for k, v := range d.Headers {
		switch v := v.(type) {
		case string:
		case []byte:
			d.Headers[k] = string(v)
		default:
			d.Headers[k] = fmt.Sprint(v)
		}
	}
	return d
}

// New is the RabbitMQ transport (see preset for the topology and the
// message format), cfg's zero fields filled with their defaults. It opens
// two connections, one for publishing and one for every subscriber, so
// that RabbitMQ's flow control, which blocks publishing connections, never
// holds up acknowledgements. Each first connection is retried until
// [Config.ConnectTimeout] (see connect); after that, Watermill reconnects
// on its own. A URL that does not parse fails with a [broker.URLError],
// a first connection that never succeeds with a [broker.ConnectError].
func New(ctx context.Context, cfg Config) (*broker.Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if _, err := amqp091.ParseURI(cfg.URL); err != nil {
		var uerr *url.Error // its message would repeat the URL, password included
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, &broker.URLError{What: "an AMQP URI", Err: err}
	}
	logger := broker.Logger(cfg.Logger)
	t := &transport{cfg: cfg, logger: logger, probe: probe{url: cfg.URL}}
	var err error
	if t.pubConn, err = connect(ctx, cfg, logger); err != nil {
		return nil, err
	}
	if t.subConn, err = connect(ctx, cfg, logger); err != nil {
		_ = t.close()
		return nil, err
	}
	t.publisher = newConfirmingPublisher(t.pubConn, preset(cfg.URL, ""))
	return broker.New(broker.Parts{Publisher: t.publisher, Subscriber: t.newSubscriber, Close: t.close, Ready: t.probe.ready},
		cfg.TopicPrefix), nil
}

// transport owns the connections, the publisher and the subscribers of
// the RabbitMQ transport.
type transport struct {
	cfg              Config
	logger           watermill.LoggerAdapter
	pubConn, subConn *wmamqp.ConnectionWrapper
	publisher        *confirmingPublisher
	subs             broker.Subscribers
	probe            probe // the readiness checks' connection
}

// newSubscriber returns a new subscriber consuming the handler's queues,
// inFlight messages at a time. Safe for concurrent use.
func (t *transport) newSubscriber(handler string, inFlight int) (message.Subscriber, error) {
	s, err := wmamqp.NewSubscriberWithConnection(preset(t.cfg.URL, t.cfg.names().ConsumerGroup(handler)), t.logger, t.subConn)
	if err != nil {
		return nil, fmt.Errorf("creating AMQP subscriber for handler %s: %w", handler, err)
	}
	sub := &subscriber{Subscriber: s, inFlight: inFlight}
	t.subs.Add(sub)
	return sub, nil
}

// subscriber holds inFlight messages of a handler's queue at once:
// each Subscribe subscribes the watermill-amqp subscriber inFlight times
// and merges the subscriptions ([broker.Lanes]). Each subscription is a
// consumer on a channel of its own with a prefetch of 1, so RabbitMQ hands
// a replica inFlight messages, one per consumer, each sent once the
// consumer acked the one before, and parks none on a busy replica.
//
// watermill-amqp's subscription sends a delivery to its channel and waits
// for that message's ack or nack before it takes the next: a larger
// prefetch on one consumer would only park messages behind the one in
// flight. One consumer with a prefetch of inFlight, dispatching
// deliveries and acking each by its delivery tag, would take one channel
// instead of inFlight, but replace the adapter's consuming loop, and with
// it its reopening of channels after a connection loss, its nack of what it
// held at Close, and its topology. The cost of consumers is a channel
// each on the subscribers' connection (RabbitMQ allows 2047 by default)
// and the topology declared once per consumer when subscribing.
//
// Close ends the subscriptions (a message a lane was handing out is
// nacked, see [broker.Lanes]), closes the adapter's subscriber, which
// nacks the messages handed out and not settled (an adapter's lane waits
// for them whatever its context), and returns once every subscription's
// channel is closed. RabbitMQ requeues what was nacked, and what the
// consumers' channels held unacked as they closed.
type subscriber struct {
	*wmamqp.Subscriber
	inFlight int
	subs     broker.Lanes
}

func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return s.subs.Subscribe(ctx, s.inFlight, func(ctx context.Context) (<-chan *message.Message, error) {
		return s.Subscriber.Subscribe(ctx, topic)
	}, nil)
}

func (s *subscriber) Close() error {
	s.subs.Cancel()
	err := s.Subscriber.Close()
	s.subs.Wait()
	return err
}

// close stops every subscriber (a message still unacknowledged is nacked
// and so requeued), then the publisher, then the connections, the
// readiness checks' too. Closing twice is harmless.
func (t *transport) close() error {
	err := errors.Join(t.subs.Close(), t.probe.close())
	if t.publisher != nil {
		err = errors.Join(err, t.publisher.Close())
	}
	for _, c := range []*wmamqp.ConnectionWrapper{t.subConn, t.pubConn} {
		if c != nil {
			err = errors.Join(err, c.Close())
		}
	}
	return err
}
