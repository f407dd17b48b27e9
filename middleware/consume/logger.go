package consume

import (
	"errors"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// NewLogger is Watermill's slog adapter on l for a router that runs the
// receiver ([message.NewRouter]): a copy whose key another owner holds
// ([receiver.ErrInProgress], the ordinary race of two deliveries of one
// message) is logged at Info where Watermill logs a handler's error at
// Error, and every other error stays an Error. [Install] logs the
// retries through one.
func NewLogger(l *slog.Logger) watermill.LoggerAdapter {
	return raceLogger{watermill.NewSlogLogger(l)}
}

type raceLogger struct {
	watermill.LoggerAdapter
}

func (l raceLogger) Error(msg string, err error, fields watermill.LogFields) {
	if errors.Is(err, receiver.ErrInProgress) {
		l.Info(msg, fields.Add(watermill.LogFields{"err": err}))
		return
	}
	l.LoggerAdapter.Error(msg, err, fields)
}

func (l raceLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return raceLogger{l.LoggerAdapter.With(fields)}
}
