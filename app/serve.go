package app

import (
	"context"
	"io"

	"github.com/onceflow/onceflow/domain"
)

// Serve is the service's main: it reads the configuration from environ
// (os.Environ's form), logs to logs, and runs the domain d until ctx ends,
// handing it environ for its own settings ([domain.Deps.Getenv]). A bad
// setting fails here with one line naming the variable.
func Serve(ctx context.Context, environ []string, d domain.Domain, logs io.Writer) error {
	cfg, err := LoadConfig(environ)
	if err != nil {
		return err
	}
	logger := NewLogger(logs, cfg.LogLevel, cfg.LogFormat)
	logOTelErrors(logger)
	a, err := New(ctx, cfg, d.WithEnviron(environ), logger)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
