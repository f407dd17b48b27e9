package flow

import (
	"context"
	"errors"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// The handler and topic of every round, under the round's topic prefix.
const (
	benchHandler = "bench"
	benchTopic   = "bench"
)

// round runs one round of the transport bench (see Round) as ro asks, each
// consumer holding inFlight messages, and returns its tally; cpu, when not
// nil, reads what the round's span cost in CPU.
func (b *TransportBench) round(ctx context.Context, ro RoundOptions, inFlight int, cpu *bench.CPUMeter) (_ *tally, err error) {
	o := b.opts
	id := shortID()
	cfg := transport.Config{
		Kind:            o.Kind,
		ServiceName:     "bench",
		TopicPrefix:     "bf" + id + ".",
		Topics:          []string{benchTopic},
		KeyMetadata:     consume.MetadataKey,
		SQLBeginner:     exactlyonce.ConsumerBeginner,
		KafkaBrokers:    o.KafkaBrokers,
		KafkaPartitions: o.Partitions,
		AMQPURL:         o.AMQPURL,
		NATSURL:         o.NATSURL,
		RedisStreamURL:  o.RedisStreamURL,
		Logger:          o.Logger,
	}
	if b.schema != nil {
		cfg.Pool = b.schema.pool
	}
	if o.Kind == transport.AMQP {
		topo := amqpTopology{url: o.AMQPURL, exchange: cfg.TopicPrefix + benchTopic, queue: cfg.Names().AMQPQueue(benchTopic, benchHandler)}
		if err := topo.declare(); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, topo.remove()) }()
	}
	tr, err := transport.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, tr.Close(), removeStreams(o.Kind, o.NATSURL, o.RedisStreamURL, cfg.TopicPrefix))
	}()

	msgs, _ := batch(id, o.Messages, o.Duplicates, copyLag(inFlight*o.Consumers))
	tl := newTally(o.Messages, len(msgs), cpu)
	var mw []message.HandlerMiddleware
	switch {
	case ro.Receiver:
		rec, err := b.newReceiver(tl)
		if err != nil {
			return nil, err
		}
		mw = append(mw, consume.Middleware(rec))
	case ro.Floor:
		mw = append(mw, bench.RedisFloorMiddleware(o.Redis, b.keyPrefix+"floor:"))
	}
	consume := func() (*routers, error) {
		return startRouters(ctx, o.Consumers, o.Logger, func(r *message.Router) error {
			sub, err := tr.Subscriber(benchHandler, inFlight)
			if err != nil {
				return err
			}
			r.AddMiddleware(append([]message.HandlerMiddleware{tl.count}, mw...)...)
			r.AddConsumerHandler(benchHandler, benchTopic, sub, tl.execute)
			return nil
		})
	}
	pub, topic, closePub, err := roundPublisher(o, tr, cfg.TopicPrefix)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closePub()) }()
	return tl, runRound(ctx, o.Kind, pub, topic, msgs, tl, consume, nil)
}

// roundPublisher returns what publishes a round's messages, the topic it
// publishes them to and what closes it: the transport's publisher on
// benchTopic, except on NATS, where a publisher outside the service feeds
// the round, as in the message contract, on the topic as the broker names
// it (prefix + benchTopic): the transport's publisher makes a message's
// key its NATS message id, so the stream would drop the copies before any
// receiver saw them.
func roundPublisher(o TransportOptions, tr *broker.Transport, prefix string) (message.Publisher, string, func() error, error) {
	var (
		pub message.Publisher
		err error
	)
	switch o.Kind {
	case transport.NATS:
		pub, err = wmnats.NewPublisher(wmnats.PublisherConfig{URL: o.NATSURL}, watermill.NewSlogLogger(o.Logger))
	default:
		return tr.Publisher(), benchTopic, func() error { return nil }, nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	return pub, prefix + benchTopic, pub.Close, nil
}

// runRound publishes msgs to topic and consumes them with the routers
// consume starts until tl has counted every delivery and settle, when not
// nil, has returned: publishing first, except on gochannel, which keeps no
// message for a consumer yet to come. The routers stop after settle, so
// that the consumers can commit what they acked.
func runRound(ctx context.Context, kind string, pub message.Publisher, topic string, msgs []*message.Message,
	tl *tally, consume func() (*routers, error), settle func(context.Context) error) (err error) {
	defer tl.close()
	p := publishingOf(kind)
	if kind != transport.GoChannel {
		if err := publishAll(ctx, pub, topic, msgs, p); err != nil {
			return err
		}
	}
	rs, err := consume()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rs.close()) }()
	published := make(chan error, 1)
	if kind == transport.GoChannel {
		go func() { published <- publishAll(ctx, pub, topic, msgs, p) }()
	} else {
		published <- nil
	}
	if err := tl.wait(ctx); err != nil {
		return err
	}
	if settle != nil {
		if err := settle(ctx); err != nil {
			return err
		}
	}
	return <-published
}
