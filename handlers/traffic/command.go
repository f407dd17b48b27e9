package traffic

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/onceflow/onceflow/domain"
)

// Commands are the payments domain's traffic commands, added to the
// service's binary: `onceflow publish`, the duplicate demo, and `onceflow
// load`, a load test that checks the ledger afterwards.
func Commands() map[string]domain.Command {
	return map[string]domain.Command{
		"publish": {Summary: "send a few payments, each several times, to a running service", Run: publish},
		"load":    {Summary: "load a running service with payments, then check each was charged once", Run: load},
	}
}

// publish runs `onceflow publish`: its flags, then Publish.
func publish(ctx context.Context, env domain.CommandEnv) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var opts PublishOptions
	fs.IntVar(&opts.Count, "count", 3, "distinct payments to send")
	fs.IntVar(&opts.Duplicates, "duplicates", 1, "extra copies of each payment")
	fs.IntVar(&opts.Concurrency, "concurrency", 8, "sends in flight at once")
	fs.StringVar(&opts.Topic, "topic", "", "topic to publish to (broker transports; default payments.requested)")
	if err := fs.Parse(env.Args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("publish takes flags only, not %q", fs.Arg(0))
	}
	return Publish(ctx, env, opts, env.Stdout)
}

// load runs `onceflow load`: its flags, then Load, with a progress bar
// on stderr when stderr is a terminal.
func load(ctx context.Context, env domain.CommandEnv) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	opts := LoadOptions{Progress: env.Stderr, ProgressBar: isTerminal(env.Stderr)}
	fs.Float64Var(&opts.Rate, "rate", 100, "messages per second; 0: as fast as --concurrency allows")
	fs.DurationVar(&opts.Duration, "duration", 10*time.Second, "how long to send")
	fs.Int64Var(&opts.Count, "count", 0, "stop after this many messages, even before --duration; 0: no limit")
	fs.IntVar(&opts.Concurrency, "concurrency", 8, "sends in flight at once")
	fs.Float64Var(&opts.DupRatio, "dup-ratio", 0.2, "fraction of sends that copy an earlier payment (same id and payload), from 0 up to 1")
	fs.StringVar(&opts.Transport, "transport", "", "gochannel (through the service's HTTP API), kafka, amqp, sql, nats or redisstream (straight to the broker); default TRANSPORT")
	fs.StringVar(&opts.ServiceURL, "service-url", "", "the running service, for gochannel's sends and the ledger check (default from HTTP_ADDR, http://127.0.0.1:8080)")
	fs.BoolVar(&opts.Check, "check", true, "wait until the service has charged what was sent and check its ledger: every payment charged once")
	fs.DurationVar(&opts.CheckTimeout, "check-timeout", time.Minute, "how long --check waits for the service")
	if err := fs.Parse(env.Args); err != nil {
		return err
	}
	_, err := Load(ctx, env, opts, env.Stdout)
	return err
}

// isTerminal reports whether w is a terminal, where a progress bar can
// redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
