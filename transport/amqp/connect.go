package amqp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/sethvargo/go-retry"

	"github.com/onceflow/onceflow/transport/broker"
)

// connect opens a connection to RabbitMQ. Watermill tries a first
// connection once, so that a service started before its broker would exit;
// here it is retried with capped exponential backoff until
// [Config.ConnectTimeout] or the end of ctx. Its error is a
// [broker.ConnectError] or, when ctx ended, wraps ctx's error; neither
// shows the URL.
func connect(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (*wmamqp.ConnectionWrapper, error) {
	timeoutCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	backoff := retry.WithJitterPercent(20, retry.WithCappedDuration(2*time.Second, retry.NewExponential(100*time.Millisecond)))
	var last error // of the last attempt that ran its course, not one the timeout cut short
	conn, err := retry.DoValue(timeoutCtx, backoff, func(ctx context.Context) (*wmamqp.ConnectionWrapper, error) {
		conn, err := dial(ctx, wmamqp.ConnectionConfig{AmqpURI: cfg.URL}, logger)
		if err != nil {
			if ctx.Err() == nil {
				last = err
				logger.Info("RabbitMQ unreachable, retrying", watermill.LogFields{"err": err.Error()})
			}
			return nil, retry.RetryableError(err)
		}
		return conn, nil
	})
	switch {
	case err == nil:
		return conn, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("connecting to RabbitMQ: %w", ctx.Err())
	case last == nil:
		last = errors.New("no answer")
	}
	return nil, &broker.ConnectError{Broker: "RabbitMQ", Timeout: cfg.ConnectTimeout, Err: last}
}

// dial makes one connection attempt, and gives up on it when ctx ends:
// amqp091 cannot cancel a dial, so the attempt goes on in the background and
// a connection it still makes is closed.
func dial(ctx context.Context, cc wmamqp.ConnectionConfig, logger watermill.LoggerAdapter) (*wmamqp.ConnectionWrapper, error) {
	type result struct {
		conn *wmamqp.ConnectionWrapper
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := wmamqp.NewConnection(cc, logger)
		done <- result{conn, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
