package app

import (
	"io"
	"log/slog"
)

// NewLogger returns the service's logger: text or JSON lines on w at level
// (debug, info, warn, error; Config.Validate has checked both).
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
