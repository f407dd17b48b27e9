package main

import (
	"context"
	"flag"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/onceflow/onceflow/app"
)

// load runs `onceflow load`: its flags, then app.Load, with a progress bar
// on stderr when stderr is a terminal.
func load(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := app.LoadOptions{Progress: stderr, ProgressBar: isTerminal(stderr)}
	fs.Float64Var(&opts.Rate, "rate", 100, "messages per second; 0: as fast as --concurrency allows")
	fs.DurationVar(&opts.Duration, "duration", 10*time.Second, "how long to send")
	fs.Int64Var(&opts.Count, "count", 0, "stop after this many messages, even before --duration; 0: no limit")
	fs.IntVar(&opts.Concurrency, "concurrency", 8, "sends in flight at once")
	fs.Float64Var(&opts.DupRatio, "dup-ratio", 0.2, "fraction of sends that copy an earlier payment (same id and payload), from 0 up to 1")
	fs.StringVar(&opts.Transport, "transport", "", "gochannel (through the service's HTTP API), kafka, amqp, sql, nats or redisstream (straight to the broker); default TRANSPORT")
	fs.StringVar(&opts.ServiceURL, "service-url", "", "the running service, for gochannel's sends and the ledger check (default from HTTP_ADDR, http://127.0.0.1:8080)")
	fs.BoolVar(&opts.Check, "check", true, "wait until the service has charged what was sent and check its ledger: every payment charged once")
	fs.DurationVar(&opts.CheckTimeout, "check-timeout", time.Minute, "how long --check waits for the service")
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := app.Load(ctx, environ, opts, stdout)
	return err
}

// isTerminal reports whether w is a terminal, where a progress bar can
// redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
