// Command onceflow runs the service (onceflow serve, the default) with the
// domain service() picks, reads or removes one idempotency record through
// its key admin (onceflow keys), lists, redrives or discards the poisoned
// messages it parked (onceflow poison), applies, undoes or lists the database
// migrations (onceflow migrate), or checks that one is ready (onceflow
// healthcheck, the container image's health check). The domain adds
// commands of its own (domain.Domain's Commands), listed with the
// service's when a command is unknown.
//
// Configuration comes from the environment; see docs/configuration.md.
package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, service(), os.Args[1:], os.Environ(), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "onceflow:", err)
		os.Exit(1)
	}
}

// run runs the command args name (serve when none) of the binary with the
// domain d.
func run(ctx context.Context, d domain.Domain, args, environ []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return app.Serve(ctx, environ, d, stderr)
	case "keys":
		return keys(ctx, args, environ, stdout, stderr)
	case "poison":
		return poisonCmd(ctx, args, environ, stdout, stderr)
	case "migrate":
		if len(args) != 1 {
			return fmt.Errorf("migrate takes one action: up, down or status")
		}
		return app.Migrate(ctx, environ, d, args[0], stdout)
	case "healthcheck":
		return app.Healthcheck(ctx, environ)
	}
	if c, ok := d.Commands[cmd]; ok {
		return c.Run(ctx, app.CommandEnv(args, environ, stdout, stderr))
	}
	return fmt.Errorf("unknown command %q: use %s", cmd, strings.Join(commands(d), ", "))
}

// commands lists the binary's commands: the service's, then the domain's
// in name order.
func commands(d domain.Domain) []string {
	names := append([]string{"serve"}, slices.Sorted(maps.Keys(d.Commands))...)
	return append(names, "keys", "poison", "migrate", "healthcheck")
}
