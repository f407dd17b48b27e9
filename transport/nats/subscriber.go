package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
)

// newSubscriber returns a new subscriber consuming as handler, inFlight
// messages at a time, on a connection of its own. Safe for concurrent use.
func (t *transport) newSubscriber(handler string, inFlight int) (message.Subscriber, error) {
	nc, err := t.connect(context.Background(), "subscriber "+handler)
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream(nats.MaxWait(requestTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("opening JetStream for the subscriber of %s: %w", handler, err)
	}
	s := &subscriber{t: t, handler: handler, inFlight: inFlight, nc: nc, js: js, closing: make(chan struct{})}
	t.subs.Add(s)
	return s, nil
}

// subscriber consumes a handler's durable consumer through a queue
// subscription, inFlight messages at a time: each of inFlight lanes takes
// a message from the subscription, hands it to the router, waits until
// the router settles it, then acks (synchronously) or naks it with the
// resend delay, and only then takes the next. The consumer's ack pending
// cap lets the server send each replica that many and more (see
// maxAckPending). A subscription that ends unsubscribes first, then
// hands back what its lanes hold and what waits in its buffer (ending,
// handBack).
//
// It stands in for watermill-nats's pkg/nats subscriber, which closes a
// subscription's output channel after unsubscribing while nats.go may
// still be running the message callback that sends to it: a data race,
// and a "send on closed channel" panic when the select picks the send.
// Here the channel closes only once every lane sending to it has
// returned.
type subscriber struct {
	t        *transport
	handler  string
	inFlight int
	nc       *nats.Conn
	js       nats.JetStreamContext

	closing   chan struct{}
	closeOnce sync.Once
	running   sync.WaitGroup
}

// Subscribe creates the topic's stream and the handler's durable consumer
// if they are missing — so a message published before the first
// subscription, or while none is open, is delivered — and joins the
// consumer's queue group, returning once the server has the subscription
// (see flush). The subscription ends when ctx ends or the
// subscriber closes: it unsubscribes, so that the server pushes it no
// more, then naks the messages it holds unsettled, for another replica to
// take at once (see handBack), and then its channel closes.
func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := s.t.ensureStream(ctx, topic); err != nil {
		return nil, err
	}
	if err := s.t.ensureConsumer(ctx, topic, s.handler, s.inFlight); err != nil {
		return nil, err
	}
	durable := s.t.cfg.names().NATSDurable(s.handler)
	sub, err := s.js.QueueSubscribeSync(topic, durable, nats.Durable(durable), nats.ManualAck())
	if err != nil {
		return nil, fmt.Errorf("subscribing %s to %s: %w", s.handler, topic, err)
	}
	if err := s.flush(ctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribing %s to %s: %w", s.handler, topic, err)
	}
	out := make(chan *message.Message)
	ctx, cancel := context.WithCancel(ctx)
	e := &ending{unsubscribed: make(chan struct{})}
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		defer close(out)
		defer cancel()
		var lanes sync.WaitGroup
		for range s.inFlight {
			lanes.Go(func() { s.consume(ctx, sub, out, e) })
		}
		lanesEnded := make(chan struct{})
		go func() {
			lanes.Wait()
			close(lanesEnded)
		}()
		select {
		case <-ctx.Done():
		case <-s.closing:
		case <-lanesEnded: // the subscription or the connection is gone
		}
		cancel()
		e.drained = sub.Drain() == nil
		if !e.drained {
			_ = sub.Unsubscribe()
		}
		close(e.unsubscribed)
		<-lanesEnded
		s.handBack(sub, e)
	}()
	return out, nil
}

// flush returns once the server has processed everything the
// subscriber's connection sent before, its subscriptions included, within
// ctx (or requestTimeout when ctx has no deadline): a message published
// after Subscribe returned may then go to this replica, as to any other
// of the handler's queue group.
func (s *subscriber) flush(ctx context.Context) error {
	ctx, cancel := requestContext(ctx)
	defer cancel()
	if err := s.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("waiting for the NATS server to take the subscription: %w", err)
	}
	return nil
}

// ending is how a subscription ends: unsubscribed closes once the
// server was told to push it no more (drained says whether by a drain,
// which still delivers what the server sent before).
type ending struct {
	unsubscribed chan struct{}
	drained      bool
}

// nak naks nm, which the subscription held as it ended, once the server
// was told to push it no more, without waiting for the server's answer.
// A message nacked before then could be redelivered to this very
// subscription, and be in flight to nobody as it unsubscribes: it would
// come back only after the ack wait.
func (e *ending) nak(nm *nats.Msg) {
	<-e.unsubscribed
	_ = nm.Nak()
}

// handBack naks, without waiting, the messages the server sent sub before
// it unsubscribed and no lane took, so that another replica gets them at
// once rather than after the ack wait: it takes them until the drain
// completes or handBackTimeout passes.
func (s *subscriber) handBack(sub *nats.Subscription, e *ending) {
	if !e.drained {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackTimeout)
	defer cancel()
	for {
		nm, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if ctx.Err() != nil {
				_ = sub.Unsubscribe()
			}
			return
		}
		e.nak(nm)
	}
}

// consume delivers sub's messages to out until ctx ends or sub is gone.
func (s *subscriber) consume(ctx context.Context, sub *nats.Subscription, out chan<- *message.Message, e *ending) {
	unmarshaler := marshaler{keyEntry: s.t.cfg.KeyMetadata}
	for {
		nm, err := sub.NextMsgWithContext(ctx)
		switch {
		case ctx.Err() != nil:
			if err == nil {
				e.nak(nm)
			}
			return
		case errors.Is(err, nats.ErrBadSubscription) || errors.Is(err, nats.ErrConnectionClosed):
			s.t.logger.Error("NATS subscription ended", err, watermill.LogFields{"handler": s.handler})
			return
		case err != nil: // a slow consumer notice: the server redelivers what was dropped
			s.t.logger.Error("NATS subscription", err, watermill.LogFields{"handler": s.handler})
			continue
		}
		msg, _ := unmarshaler.Unmarshal(nm)
		s.deliver(ctx, nm, msg, out, e)
	}
}

// deliver hands msg to out and settles nm as the router settles msg.
func (s *subscriber) deliver(ctx context.Context, nm *nats.Msg, msg *message.Message, out chan<- *message.Message, e *ending) {
	msgCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	msg.SetContext(msgCtx)
	fields := watermill.LogFields{"handler": s.handler, "message_uuid": msg.UUID}
	settle := func(what string, f func(...nats.AckOpt) error) {
		actx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		if err := f(nats.Context(actx)); err != nil {
			s.t.logger.Error("NATS "+what+" failed; the message comes back after the ack wait", err, fields)
		}
	}
	select {
	case out <- msg:
	case <-ctx.Done():
		e.nak(nm)
		return
	}
	select {
	case <-msg.Acked():
		settle("ack", nm.AckSync)
	case <-msg.Nacked():
		settle("nak", func(o ...nats.AckOpt) error { return nm.NakWithDelay(s.t.cfg.ResendInterval, o...) })
	case <-ctx.Done():
		e.nak(nm)
	}
}

// Close ends every subscription, waits up to closeTimeout for them
// to settle the messages they hold, and closes the connection. Closing
// twice is harmless.
func (s *subscriber) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-time.After(closeTimeout):
		err = fmt.Errorf("the NATS subscriber of %s did not stop within %v", s.handler, closeTimeout)
	}
	s.nc.Close()
	return err
}
