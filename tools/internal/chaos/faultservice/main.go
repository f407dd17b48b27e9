// Command faultservice is the service the fault suite runs as separate
// processes: the template's test domain (app/apptest/testdomain) in
// app.Serve, with the handler faults that the CHAOS_* settings switch on
// around every route (app/apptest/faults; refused with ENV=production).
// Its one command is serve, the default; everything else, the service's
// and the domain's settings, comes from the environment as for onceflow
// serve. The suite builds it once per test process (chaos.Build).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "faultservice:", err)
		os.Exit(1)
	}
}

// run serves the test domain behind the faults environ switches on, until
// ctx ends; args may name the command, serve.
func run(ctx context.Context, args, environ []string, logs io.Writer) error {
	if len(args) > 1 || (len(args) == 1 && args[0] != "serve") {
		return fmt.Errorf("unknown command %q: the one command is serve", strings.Join(args, " "))
	}
	c, err := faults.FromEnv(environ)
	if err != nil {
		return err
	}
	return app.Serve(ctx, environ, faults.Wrap(testdomain.Domain(), c), logs)
}
