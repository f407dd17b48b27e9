package flow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// plainHandler names the plain consumer's handler, and so its consumer
// group or queue.
const plainHandler = "plain"

// plainConsumer is the ServiceBench's context: a Watermill router on the
// transport the service runs on, its subscriber holding DefaultInFlight
// messages like the service's, and a handler that only acks. It counts
// into the round current holds.
type plainConsumer struct {
	cfg     transport.Config
	tr      *broker.Transport
	routers *routers
	current atomic.Pointer[tally]
}

// startPlain connects the plain consumer to the broker of o and starts its
// router.
func startPlain(ctx context.Context, o ServiceOptions, s *schema) (_ *plainConsumer, err error) {
	ns := "bp" + shortID()
	p := &plainConsumer{cfg: transport.Config{
		Kind:            o.Kind,
		ServiceName:     ns,
		TopicPrefix:     ns + ".",
		Topics:          []string{testdomain.TopicRequested},
		KafkaBrokers:    o.KafkaBrokers,
		KafkaPartitions: DefaultPartitions,
		KeyMetadata:     consume.MetadataKey,
		SQLBeginner:     exactlyonce.ConsumerBeginner,
		AMQPURL:         o.AMQPURL,
		NATSURL:         o.NATSURL,
		RedisStreamURL:  o.RedisStreamURL,
		Pool:            s.pool,
		Logger:          o.Logger,
	}}
	if o.Kind != transport.SQL {
		p.cfg.Pool = nil
	}
	if p.tr, err = transport.New(ctx, p.cfg); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.stop(o))
		}
	}()
	p.routers, err = startRouters(ctx, 1, o.Logger, func(r *message.Router) error {
		sub, err := p.tr.Subscriber(plainHandler, DefaultInFlight)
		if err != nil {
			return err
		}
		r.AddMiddleware(func(h message.HandlerFunc) message.HandlerFunc {
			return func(msg *message.Message) ([]*message.Message, error) {
				if tl := p.current.Load(); tl != nil {
					return tl.count(h)(msg)
				}
				return h(msg) // between rounds: nothing is published then
			}
		})
		r.AddConsumerHandler(plainHandler, testdomain.TopicRequested, sub, func(msg *message.Message) error {
			if tl := p.current.Load(); tl != nil {
				return tl.execute(msg)
			}
			return nil
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := p.round(ctx, o, warmup); err != nil {
		return nil, fmt.Errorf("warming up: %w", err)
	}
	return p, nil
}

// round publishes n requests to the plain consumer's topic and waits
// until each is acked.
func (p *plainConsumer) round(ctx context.Context, o ServiceOptions, n int) (RoundTimes, error) {
	msgs := requestMessages(shortID(), n)
	tl := newTally(n, n, nil)
	defer tl.close()
	p.current.Store(tl)
	defer p.current.Store(nil)
	published := make(chan error, 1)
	go func() {
		published <- publishAll(ctx, p.tr.Publisher(), testdomain.TopicRequested, msgs, publishingOf(o.Kind))
	}()
	if err := tl.wait(ctx); err != nil {
		return RoundTimes{}, errors.Join(err, <-published)
	}
	if err := <-published; err != nil {
		return RoundTimes{}, err
	}
	busy, process := tl.busy()
	return RoundTimes{Rate: tl.rate(), Lanes: DefaultInFlight, Handling: tl.handlingPerDelivery(), ClaimsPerBatch: math.NaN(),
		Busy: busy, Process: process}, nil
}

// stop stops the router, closes the transport and removes what the
// consumer left on the broker.
func (p *plainConsumer) stop(o ServiceOptions) error {
	var errs []error
	if p.routers != nil {
		errs = append(errs, p.routers.close())
	}
	if p.tr != nil {
		errs = append(errs, p.tr.Close())
	}
	exchange := p.cfg.TopicPrefix + testdomain.TopicRequested
	queue := p.cfg.Names().AMQPQueue(testdomain.TopicRequested, plainHandler)
	return errors.Join(append(errs, removeBrokerState(o, p.cfg.TopicPrefix, []string{exchange}, []string{queue}))...)
}
