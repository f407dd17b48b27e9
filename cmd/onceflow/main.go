// Command onceflow runs the service (onceflow serve, the default), sends the
// duplicate demo to a running one (onceflow publish), loads one with
// payments and checks its ledger (onceflow load), reads or removes one
// idempotency record through its key admin (onceflow keys), applies,
// undoes or lists the database migrations (onceflow migrate), or checks
// that one is ready (onceflow healthcheck, the container image's health
// check).
//
// Configuration comes from the environment; see docs/configuration.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "onceflow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return app.Serve(ctx, environ, stderr)
	case "publish":
		fs := flag.NewFlagSet("publish", flag.ContinueOnError)
		fs.SetOutput(stderr)
		var opts app.PublishOptions
		fs.IntVar(&opts.Count, "count", 3, "distinct payments to send")
		fs.IntVar(&opts.Duplicates, "duplicates", 1, "extra copies of each payment")
		fs.IntVar(&opts.Concurrency, "concurrency", 8, "sends in flight at once")
		fs.StringVar(&opts.Topic, "topic", "", "topic to publish to (broker transports; default payments.requested)")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return app.Publish(ctx, environ, opts, stdout)
	case "load":
		return load(ctx, args, environ, stdout, stderr)
	case "keys":
		return keys(ctx, args, environ, stdout, stderr)
	case "migrate":
		if len(args) != 1 {
			return fmt.Errorf("migrate takes one action: up, down or status")
		}
		return app.Migrate(ctx, environ, args[0], stdout)
	case "healthcheck":
		return app.Healthcheck(ctx, environ)
	default:
		return fmt.Errorf("unknown command %q: use serve, publish, load, keys, migrate or healthcheck", cmd)
	}
}
