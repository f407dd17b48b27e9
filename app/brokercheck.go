package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/jackc/pgx/v5/pgxpool"
)

// brokerCheck answers whether the broker can be reached now; /readyz
// reports it as "broker". nil means there is nothing to check (the
// in-process transport).
type brokerCheck func(ctx context.Context) error

// amqpConnected is ready while the publishing connection to RabbitMQ is up;
// watermill-amqp reconnects it by itself after an outage.
func amqpConnected(conn *amqp.ConnectionWrapper) brokerCheck {
	return func(context.Context) error {
		if !conn.IsConnected() {
			return errors.New("not connected to RabbitMQ")
		}
		return nil
	}
}

// kafkaAnswers is ready when one of brokers answers an ApiVersions
// request on a new connection, within ctx.
func kafkaAnswers(brokers []string) brokerCheck {
	return func(ctx context.Context) error {
		cfg := sarama.NewConfig()
		timeout := time.Second
		if d, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(d), 10*time.Millisecond)
		}
		cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = timeout, timeout, timeout
		var errs []error
		for _, addr := range brokers {
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
// sql transport's broker.
func postgresAnswers(pool *pgxpool.Pool) brokerCheck {
	return func(ctx context.Context) error { return pool.Ping(ctx) }
}
