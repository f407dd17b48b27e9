package app

import (
	"io"
	"log/slog"

	"golang.org/x/term"
)

// NewLogger returns the service's logger: lines on w at level (debug, info,
// warn, error), in format text, json or auto (Config.Validate has checked
// both). auto, the default, writes text when w is a terminal, for a person
// reading it, and JSON lines otherwise, for a log collector.
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" || (format == "auto" && !isTerminal(w)) {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// isTerminal reports whether w is a file open on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
