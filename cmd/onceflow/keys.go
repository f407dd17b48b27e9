package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/onceflow/onceflow/app"
)

// keys runs `onceflow keys get|release|evict`: its flags, then app.Keys.
func keys(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("keys needs an action: get, release or evict")
	}
	opts := app.KeysOptions{Action: args[0]}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.Target.Handler, "handler", "", "the handler: a message route's name, or http for Idempotency-Key records")
	fs.StringVar(&opts.Target.Key, "key", "", "the idempotency key: the message's (metadata idempotency_key, else its UUID) or the request's Idempotency-Key")
	fs.StringVar(&opts.Target.Client, "client", "", "handler http: the API_KEYS client the request came from (none when API_KEYS is unset)")
	fs.StringVar(&opts.Target.Route, "route", "", `handler http: the route, a pattern of the domain's API such as "POST /v1/orders" (default: the only one)`)
	fs.BoolVar(&opts.Force, "force", false, "release: free a key whose owner still holds its lease (the owner may still be running)")
	fs.StringVar(&opts.ServiceURL, "service-url", "", "the running service's key admin (default from INTERNAL_ADDR, else HTTP_ADDR: http://127.0.0.1:8080)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return app.Keys(ctx, environ, opts, stdout)
}
