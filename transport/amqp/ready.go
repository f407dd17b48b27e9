package amqp

import (
	"context"
	"fmt"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/transport/broker"
)

// probe checks RabbitMQ on a connection of its own, kept between
// checks: a check opens and closes a channel on it. (The service's own
// connections are not asked: watermill-amqp swaps their state while it
// reconnects without a lock, so reading it from another goroutine would
// race.) One check runs at a time; safe for concurrent use.
type probe struct {
	url  string
	mu   sync.Mutex
	conn *amqp091.Connection // nil until the first check, and after a failed one
}

// ready is nil when RabbitMQ opens a channel within ctx on the kept
// connection, or else on a new one.
func (p *probe) ready(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		if err := ask(ctx, p.conn); err == nil {
			return nil
		}
		p.drop()
	}
	conn, err := amqp091.DialConfig(p.url, amqp091.Config{Dial: amqp091.DefaultDial(broker.UntilDeadline(ctx))})
	if err != nil {
		return fmt.Errorf("connecting to RabbitMQ: %w", err)
	}
	p.conn = conn
	if err := ask(ctx, conn); err != nil {
		p.drop()
		return fmt.Errorf("asking RabbitMQ: %w", err)
	}
	return nil
}

// drop closes the kept connection, without waiting long for a broker
// that may not answer.
func (p *probe) drop() {
	_ = p.conn.CloseDeadline(time.Now().Add(100 * time.Millisecond))
	p.conn = nil
}

// close closes the kept connection. Closing twice is harmless.
func (p *probe) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.drop()
	}
	return nil
}

// ask opens and closes a channel on conn, giving up when ctx ends
// (amqp091's calls take no context; the caller then drops conn, which ends
// the call).
func ask(ctx context.Context, conn *amqp091.Connection) error {
	done := make(chan error, 1)
	go func() {
		ch, err := conn.Channel()
		if err == nil {
			err = ch.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
