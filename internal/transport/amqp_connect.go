package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/sethvargo/go-retry"
)

// URLError is an AMQP URL that does not parse. Its message leaves the URL
// out: it may hold a password.
type URLError struct{ Err error }

func (e *URLError) Error() string { return "not an AMQP URI: " + e.Err.Error() }
func (e *URLError) Unwrap() error { return e.Err }

// ConnectError is a first connection to RabbitMQ that did not succeed
// within Timeout ([Config.AMQPConnectTimeout]); Err is the last attempt's
// error.
type ConnectError struct {
	Timeout time.Duration
	Err     error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("no connection to RabbitMQ within %v: %v", e.Timeout, e.Err)
}
func (e *ConnectError) Unwrap() error { return e.Err }

// connectAMQP opens a connection to RabbitMQ. Watermill tries a first
// connection once, so that a service started before its broker would exit;
// here it is retried with capped exponential backoff until
// AMQPConnectTimeout or the end of ctx. Its error is a [ConnectError] or,
// when ctx ended, wraps ctx's error; neither shows the URL.
func connectAMQP(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (*amqp.ConnectionWrapper, error) {
	timeoutCtx, cancel := context.WithTimeout(ctx, cfg.AMQPConnectTimeout)
	defer cancel()
	backoff := retry.WithJitterPercent(20, retry.WithCappedDuration(2*time.Second, retry.NewExponential(100*time.Millisecond)))
	var last error // of the last attempt that ran its course, not one the timeout cut short
	conn, err := retry.DoValue(timeoutCtx, backoff, func(ctx context.Context) (*amqp.ConnectionWrapper, error) {
		conn, err := dialAMQP(ctx, amqp.ConnectionConfig{AmqpURI: cfg.AMQPURL}, logger)
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
	return nil, &ConnectError{Timeout: cfg.AMQPConnectTimeout, Err: last}
}

// dialAMQP makes one connection attempt, and gives up on it when ctx ends:
// amqp091 cannot cancel a dial, so the attempt goes on in the background and
// a connection it still makes is closed.
func dialAMQP(ctx context.Context, cc amqp.ConnectionConfig, logger watermill.LoggerAdapter) (*amqp.ConnectionWrapper, error) {
	type result struct {
		conn *amqp.ConnectionWrapper
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := amqp.NewConnection(cc, logger)
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
