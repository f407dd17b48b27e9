package broker

import (
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
)

// Logger is l as Watermill's adapters take a logger, or one that discards
// everything when l is nil.
func Logger(l *slog.Logger) watermill.LoggerAdapter {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return watermill.NewSlogLogger(l)
}
