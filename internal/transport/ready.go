package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// amqpAnswers is ready when RabbitMQ at url completes an AMQP handshake on
// a new connection within ctx. (The service's own connections are not
// asked: watermill-amqp swaps their state while it reconnects without a
// lock, so reading it from another goroutine would race.)
func amqpAnswers(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		timeout := untilDeadline(ctx)
		conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(timeout)})
		if err != nil {
			return fmt.Errorf("connecting to RabbitMQ: %w", err)
		}
		return conn.Close()
	}
}

// kafkaAnswers is ready when one of the brokers of c answers an
// ApiVersions request on a new connection, within ctx: a connection made
// as the service's clients make theirs (TLS, SASL), so that a broker that
// refuses their credentials is not ready.
func kafkaAnswers(c Config) func(context.Context) error {
	return func(ctx context.Context) error {
		cfg := kafkaBaseConfig(sarama.NewConfig(), c)
		timeout := untilDeadline(ctx)
		cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = timeout, timeout, timeout
		var errs []error
		for _, addr := range c.KafkaBrokers {
			b := sarama.NewBroker(addr)
			if err := b.Open(cfg); err != nil {
				errs = append(errs, err)
				continue
			}
			_, err := b.ApiVersions(&sarama.ApiVersionsRequest{})
			_ = b.Close()
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("broker %s: %w", addr, err))
		}
		return errors.Join(errs...)
	}
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
