package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// publishChannels is how many channels the RabbitMQ publisher keeps
// open. Publish calls share them, each waiting for its own confirms, so
// the count bounds no publisher: it spreads RabbitMQ's work per channel.
const publishChannels = 4

// confirmingPublisher publishes with publisher confirms (see preset) on
// channels it keeps open across Publish calls, on the publishing
// connection. A channel that closed — the connection was lost and
// watermill-amqp reconnected it, or RabbitMQ closed the channel for an
// error — is opened again by the next Publish that picks it; while the
// connection is down, Publish fails at once. No channel is ever given up
// for good, which is why this stands in for watermill-amqp's channel
// pool: that pool drops a channel it could not reopen, and once it has
// dropped them all Publish waits for good.
//
// A Publish call sends its messages in order on one channel, then waits
// for RabbitMQ to confirm each: it returns nil once RabbitMQ has taken
// every one, and an error if it refused one or the channel closed first
// (RabbitMQ may then have taken some; a retry makes copies the receiver
// recognises). Safe for concurrent use.
type confirmingPublisher struct {
	conn   *wmamqp.ConnectionWrapper
	config wmamqp.Config

	next     atomic.Uint32
	channels [publishChannels]confirmChannel
	closed   atomic.Bool

	mu        sync.Mutex
	exchanges map[string]bool // declared
}

func newConfirmingPublisher(conn *wmamqp.ConnectionWrapper, config wmamqp.Config) *confirmingPublisher {
	return &confirmingPublisher{conn: conn, config: config, exchanges: map[string]bool{}}
}

// confirmChannel is a channel in confirm mode, opened on first use and
// again once it closed.
type confirmChannel struct {
	mu sync.Mutex
	ch *amqp091.Channel
}

// open returns the channel, opening it on conn if it is closed or was
// never opened.
func (c *confirmChannel) open(conn *amqp091.Connection) (*amqp091.Channel, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil && !c.ch.IsClosed() {
		return c.ch, nil
	}
	if conn == nil {
		return nil, errors.New("not connected to RabbitMQ")
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("opening a channel to RabbitMQ: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("putting a RabbitMQ channel in confirm mode: %w", err)
	}
	c.ch = ch
	return ch, nil
}

// close closes the channel if it is open.
func (c *confirmChannel) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil || c.ch.IsClosed() {
		return nil
	}
	err := c.ch.Close()
	if errors.Is(err, amqp091.ErrClosed) {
		err = nil
	}
	return err
}

// Publish sends msgs to topic's exchange, declaring it first if this
// publisher has not yet, and returns once RabbitMQ confirmed them all.
func (p *confirmingPublisher) Publish(topic string, msgs ...*message.Message) error {
	if p.closed.Load() {
		return errors.New("the AMQP publisher is closed")
	}
	if !p.conn.IsConnected() {
		return errors.New("not connected to RabbitMQ")
	}
	ch, err := p.channels[p.next.Add(1)%publishChannels].open(p.conn.Connection())
	if err != nil {
		return err
	}
	exchange := p.config.Exchange.GenerateName(topic)
	if err := p.declare(exchange); err != nil {
		return err
	}
	routingKey := p.config.Publish.GenerateRoutingKey(topic)
	confirms := make([]*amqp091.DeferredConfirmation, len(msgs))
	for i, msg := range msgs {
		pub, err := p.config.Marshaler.Marshal(msg)
		if err != nil {
			return fmt.Errorf("marshalling message %s: %w", msg.UUID, err)
		}
		if confirms[i], err = ch.PublishWithDeferredConfirmWithContext(msg.Context(), exchange, routingKey, false, false, pub); err != nil {
			return fmt.Errorf("publishing message %s to %s: %w", msg.UUID, exchange, err)
		}
	}
	for i, dc := range confirms {
		if err := confirmed(msgs[i].Context(), dc); err != nil {
			return fmt.Errorf("publishing message %s to %s: %w", msgs[i].UUID, exchange, err)
		}
	}
	return nil
}

// confirmed waits for RabbitMQ's confirm of one message.
func confirmed(ctx context.Context, dc *amqp091.DeferredConfirmation) error {
	ack, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("waiting for RabbitMQ to confirm: %w", err)
	case !ack:
		return errors.New("RabbitMQ did not take it (a nack, or the channel closed first)")
	}
	return nil
}

// declare declares exchange as the subscribers do, once per publisher,
// on a channel opened for it and closed after. amqp091 sends a declare
// without the lock a publish holds across its frames, so on a channel
// another Publish is using the declare could land between a message's
// frames, and RabbitMQ would close the connection (UNEXPECTED_FRAME); a
// declare RabbitMQ refuses closes its channel, which no Publish uses
// either.
func (p *confirmingPublisher) declare(exchange string) error {
	if exchange == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exchanges[exchange] {
		return nil
	}
	conn := p.conn.Connection()
	if conn == nil {
		return errors.New("not connected to RabbitMQ")
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("opening a channel to RabbitMQ: %w", err)
	}
	defer func() { _ = ch.Close() }() // closed already if RabbitMQ refused the declare
	if err := p.config.TopologyBuilder.ExchangeDeclare(ch, exchange, p.config); err != nil {
		return fmt.Errorf("declaring exchange %s: %w", exchange, err)
	}
	p.exchanges[exchange] = true
	return nil
}

// Close closes the channels; Publish fails from then on, and so does a
// Publish waiting for a confirm. Closing twice is harmless.
func (p *confirmingPublisher) Close() error {
	p.closed.Store(true)
	var err error
	for i := range p.channels {
		err = errors.Join(err, p.channels[i].close())
	}
	return err
}
