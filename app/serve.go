package app

import (
	"context"
	"io"
)

// Serve is the service's main: it reads the configuration from environ
// (os.Environ's form), logs to logs, and runs until ctx ends. A bad setting
// fails here with one line naming the variable.
func Serve(ctx context.Context, environ []string, logs io.Writer) error {
	cfg, err := LoadConfig(environ)
	if err != nil {
		return err
	}
	logger := NewLogger(logs, cfg.LogLevel, cfg.LogFormat)
	logOTelErrors(logger)
	a, err := New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
