package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// The readiness checks ask the broker on a connection that lasts: the
// transport's own where it can be asked (NATS, Redis Streams, the SQL
// pool), otherwise one the check keeps for itself between checks (RabbitMQ,
// Kafka). A check dials again only after its connection failed, and then
// at once, so that a connection the broker closed while idle does not make
// a ready broker look down. A probe storm therefore costs the broker round
// trips on one connection, never a connection each.

// amqpProbe checks RabbitMQ on a connection of its own, kept between
// checks: a check opens and closes a channel on it. (The service's own
// connections are not asked: watermill-amqp swaps their state while it
// reconnects without a lock, so reading it from another goroutine would
// race.) One check runs at a time; safe for concurrent use.
type amqpProbe struct {
	url  string
	mu   sync.Mutex
	conn *amqp091.Connection // nil until the first check, and after a failed one
}

// ready is nil when RabbitMQ opens a channel within ctx on the kept
// connection, or else on a new one.
func (p *amqpProbe) ready(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		if err := askAMQP(ctx, p.conn); err == nil {
			return nil
		}
		p.drop()
	}
	conn, err := amqp091.DialConfig(p.url, amqp091.Config{Dial: amqp091.DefaultDial(untilDeadline(ctx))})
	if err != nil {
		return fmt.Errorf("connecting to RabbitMQ: %w", err)
	}
	p.conn = conn
	if err := askAMQP(ctx, conn); err != nil {
		p.drop()
		return fmt.Errorf("asking RabbitMQ: %w", err)
	}
	return nil
}

// drop closes the kept connection, without waiting long for a broker
// that may not answer.
func (p *amqpProbe) drop() {
	_ = p.conn.CloseDeadline(time.Now().Add(100 * time.Millisecond))
	p.conn = nil
}

// close closes the kept connection. Closing twice is harmless.
func (p *amqpProbe) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.drop()
	}
	return nil
}

// askAMQP opens and closes a channel on conn, giving up when ctx ends
// (amqp091's calls take no context; the caller then drops conn, which ends
// the call).
func askAMQP(ctx context.Context, conn *amqp091.Connection) error {
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

// kafkaProbe checks Kafka on a broker connection of its own, kept between
// checks: a check sends it an ApiVersions request. One check runs at a
// time; safe for concurrent use.
type kafkaProbe struct {
	// config is the transport's: the probe connects as its clients do
	// (TLS, SASL), so that a broker that refuses their credentials is not
	// ready.
	config  Config
	brokers []string
	mu      sync.Mutex
	broker  *sarama.Broker // nil until the first check, and after a failed one
}

// ready is nil when a broker answers an ApiVersions request within ctx:
// the kept one, or else the first of brokers that does on a new
// connection, which is then kept.
func (p *kafkaProbe) ready(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broker != nil {
		if _, err := p.broker.ApiVersions(&sarama.ApiVersionsRequest{}); err == nil {
			return nil
		}
		_ = p.broker.Close()
		p.broker = nil
	}
	cfg := kafkaBaseConfig(sarama.NewConfig(), p.config)
	timeout := untilDeadline(ctx)
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = timeout, timeout, timeout
	var errs []error
	for _, addr := range p.brokers {
		b := sarama.NewBroker(addr)
		if err := b.Open(cfg); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := b.ApiVersions(&sarama.ApiVersionsRequest{}); err != nil {
			_ = b.Close()
			errs = append(errs, fmt.Errorf("broker %s: %w", addr, err))
			continue
		}
		p.broker = b
		return nil
	}
	return errors.Join(errs...)
}

// close closes the kept connection. Closing twice is harmless.
func (p *kafkaProbe) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broker != nil {
		_ = p.broker.Close()
		p.broker = nil
	}
	return nil
}

// postgresAnswers is ready when the pool's database answers a ping: the
// SQL transport's broker.
func postgresAnswers(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error { return pool.Ping(ctx) }
}

// untilDeadline is what is left of ctx's deadline (at least 10ms), or a
// second when ctx has none: the dial and read timeout of a check's own
// connection, whose client takes no context.
func untilDeadline(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), 10*time.Millisecond)
	}
	return time.Second
}
