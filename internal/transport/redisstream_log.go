package transport

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"
)

// closingLogger is the logger of one Redis Streams subscriber. A
// watermill-redisstream subscriber's Close does not wait for its reading
// goroutine: that one ends up to a second and a half later, after a read
// that fails with context.Canceled or redis.ErrClosed and half a second of
// sleep, and logs that failure as an error. So the errors that only say the
// subscriber is stopping are logged at debug level, and nothing is logged
// once closed is set, which Close does first, so that a closed transport
// logs nothing more.
type closingLogger struct {
	watermill.LoggerAdapter
	closed *atomic.Bool
}

func (l closingLogger) Error(msg string, err error, fields watermill.LogFields) {
	switch {
	case l.closed.Load():
	case errors.Is(err, context.Canceled) || errors.Is(err, redis.ErrClosed):
		l.LoggerAdapter.Debug(msg, fields.Add(watermill.LogFields{"err": err}))
	default:
		l.LoggerAdapter.Error(msg, err, fields)
	}
}

func (l closingLogger) Info(msg string, fields watermill.LogFields) {
	if !l.closed.Load() {
		l.LoggerAdapter.Info(msg, fields)
	}
}

func (l closingLogger) Debug(msg string, fields watermill.LogFields) {
	if !l.closed.Load() {
		l.LoggerAdapter.Debug(msg, fields)
	}
}

func (l closingLogger) Trace(msg string, fields watermill.LogFields) {
	if !l.closed.Load() {
		l.LoggerAdapter.Trace(msg, fields)
	}
}

func (l closingLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return closingLogger{l.LoggerAdapter.With(fields), l.closed}
}
