package gochannel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/transport/broker"
)

// Config tunes the in-process transport. The zero value is ready to use.
type Config struct {
	// TopicPrefix is prepended to every topic.
	TopicPrefix string
	// Logger receives the pub/sub's logs; nil discards them.
	Logger *slog.Logger
}

// New is the in-process transport: every handler subscribes to one
// pub/sub in this process (inProcess). Messages live only in this
// process; there is no broker to reach, so the transport has no readiness
// check.
func New(cfg Config) *broker.Transport {
	ps := &inProcess{logger: broker.Logger(cfg.Logger), topics: map[string][]*inProcessSub{}}
	return broker.New(broker.Parts{
		Publisher: ps,
		Subscriber: func(_ string, inFlight int) (message.Subscriber, error) {
			return inProcessSubscriber{ps, inFlight}, nil
		},
		Close: ps.Close,
	}, cfg.TopicPrefix)
}

// errSubscriptionEnded is a delivery cut short by the end of its
// subscription.
var errSubscriptionEnded = errors.New("the subscription ended before the message was acked")

// inProcess is the in-process pub/sub. Publish hands a copy of each
// message to every subscription of its topic and returns once each has
// acked it; a nacked copy is handed out again at once. That is the
// transport's backpressure: without it a burst of thousands would run at
// once, exhaust the database pool, time out and be nacked and resent at
// once — a livelock. Each subscription holds at most its in-flight count
// of messages, so work in flight is bounded by the publishers and by that
// count, as a broker's prefetch bounds it; an API that publishes answers
// once the message is handled. A message published to a topic nobody
// subscribes to is dropped. Publish fails if a subscription ends (its
// subscriber closed, its context ended) before acking the message, or if
// the message's own context ends first (an API request's, at its
// deadline, while its handler keeps failing): the caller has it back, and
// is told so, instead of waiting without limit.
//
// It stands in for Watermill's GoChannel, whose Publish, when it blocks
// until the subscribers ack, holds a lock of the topic until they have:
// a topic has one message in flight however many publishers and
// subscriptions it has, and a subscription handed out several at once
// would still get them one after another.
type inProcess struct {
	logger watermill.LoggerAdapter

	mu     sync.Mutex
	topics map[string][]*inProcessSub
	closed bool
}

// inProcessSub is a subscription of inProcess.
type inProcessSub struct {
	ps    *inProcess
	topic string
	ctx   context.Context
	out   chan *message.Message
	// slots holds a token per message handed out and not yet acked.
	slots chan struct{}
	// done closes when the subscription ends; out closes after it, once
	// no delivery is under way (sending).
	done    chan struct{}
	endOnce sync.Once
	sending sync.WaitGroup
}

// Publish delivers msgs one after another, each to every subscription of
// topic, and returns once each subscription acked each message.
func (p *inProcess) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		subs, err := p.deliveries(topic)
		if err != nil {
			return err
		}
		if len(subs) == 0 {
			p.logger.Info("No subscribers to send message", watermill.LogFields{"message_uuid": msg.UUID, "topic": topic})
			continue
		}
		errs := make(chan error, len(subs))
		for _, s := range subs {
			go func() { errs <- s.deliver(msg) }()
		}
		for range subs {
			err = errors.Join(err, <-errs)
		}
		if err != nil {
			return fmt.Errorf("publishing message %s to %s: %w", msg.UUID, topic, err)
		}
	}
	return nil
}

// deliveries returns the subscriptions of topic, each counting one more
// delivery under way.
func (p *inProcess) deliveries(topic string) ([]*inProcessSub, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the in-process pub/sub is closed")
	}
	subs := append([]*inProcessSub(nil), p.topics[topic]...)
	for _, s := range subs {
		s.sending.Add(1)
	}
	return subs, nil
}

// deliver hands msg to s once it has a free slot, again after each nack,
// and returns once s acked it, s ended or msg's context ended.
func (s *inProcessSub) deliver(msg *message.Message) error {
	defer s.sending.Done()
	gaveUp := msg.Context().Done()
	select {
	case s.slots <- struct{}{}:
	case <-s.done:
		return errSubscriptionEnded
	case <-gaveUp:
		return notAcked(msg)
	}
	defer func() { <-s.slots }()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	for {
		m := msg.Copy()
		m.SetContext(ctx)
		select {
		case s.out <- m:
		case <-s.done:
			return errSubscriptionEnded
		case <-gaveUp:
			return notAcked(msg)
		}
		select {
		case <-m.Acked():
			return nil
		case <-m.Nacked():
		case <-s.done:
			select {
			case <-m.Acked(): // acked as the subscription ended
				return nil
			default:
				return errSubscriptionEnded
			}
		case <-gaveUp:
			select {
			case <-m.Acked(): // acked as the publisher gave up
				return nil
			default:
				return notAcked(msg)
			}
		}
	}
}

// notAcked is the error of a delivery whose message's context ended before
// it was acked.
func notAcked(msg *message.Message) error {
	return fmt.Errorf("not acked before the message's context ended: %w", context.Cause(msg.Context()))
}

// subscribe opens a subscription to topic holding up to inFlight messages,
// which ends with ctx.
func (p *inProcess) subscribe(ctx context.Context, topic string, inFlight int) (*inProcessSub, error) {
	s := &inProcessSub{
		ps: p, topic: topic, ctx: ctx,
		out:   make(chan *message.Message),
		slots: make(chan struct{}, inFlight),
		done:  make(chan struct{}),
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the in-process pub/sub is closed")
	}
	p.topics[topic] = append(p.topics[topic], s)
	go func() {
		select {
		case <-ctx.Done():
			s.end()
		case <-s.done:
		}
	}()
	return s, nil
}

// end ends s: it takes no more deliveries, those under way return, and
// then its channel closes. Ending twice is harmless.
func (s *inProcessSub) end() {
	s.endOnce.Do(func() {
		p := s.ps
		p.mu.Lock()
		subs := p.topics[s.topic]
		for i, other := range subs {
			if other == s {
				subs = append(subs[:i:i], subs[i+1:]...)
				break
			}
		}
		if len(subs) == 0 {
			delete(p.topics, s.topic)
		} else {
			p.topics[s.topic] = subs
		}
		close(s.done)
		p.mu.Unlock()
		s.sending.Wait()
		close(s.out)
	})
}

// Close ends every subscription; Publish fails from then on. Closing twice
// is harmless.
func (p *inProcess) Close() error {
	p.mu.Lock()
	p.closed = true
	var subs []*inProcessSub
	for _, ts := range p.topics {
		subs = append(subs, ts...)
	}
	p.mu.Unlock()
	for _, s := range subs {
		s.end()
	}
	return nil
}

// inProcessSubscriber is a handler's subscriber of inProcess: each of its
// subscriptions holds up to inFlight messages.
type inProcessSubscriber struct {
	ps       *inProcess
	inFlight int
}

func (s inProcessSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	sub, err := s.ps.subscribe(ctx, topic, s.inFlight)
	if err != nil {
		return nil, err
	}
	return sub.out, nil
}

// Close closes the whole pub/sub: a router closes its subscribers when it
// stops, and a handler still running then must not have what it publishes
// dropped for want of a subscription; its Publish fails instead, and so
// does every Publish waiting for an ack.
func (s inProcessSubscriber) Close() error { return s.ps.Close() }
