package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/onceflow/onceflow/app"
)

// poisonCmd runs `onceflow poison list|show|redrive|discard`: its flags,
// then app.Poison.
func poisonCmd(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("poison needs an action: list, show, redrive or discard")
	}
	opts := app.PoisonOptions{Action: args[0]}
	fs := flag.NewFlagSet("poison "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.ID, "id", "", "one parked message, by the id list shows")
	fs.StringVar(&opts.Filter.Handler, "handler", "", "only the messages this handler poisoned")
	fs.StringVar(&opts.Filter.Topic, "topic", "", "only the messages of this topic")
	fs.StringVar(&opts.Class, "class", "", "only this class: malformed, bad_signature, key_reused, payload_too_large or permanent")
	fs.StringVar(&opts.State, "state", "", "list: parked (default), redriven, discarded or all")
	fs.StringVar(&opts.Since, "since", "", "only the messages parked at or after this time (RFC 3339) or this long ago (such as 2h)")
	fs.StringVar(&opts.Until, "until", "", "only the messages parked before this time (RFC 3339) or this long ago")
	fs.IntVar(&opts.Filter.Limit, "limit", 0, "list: the most messages on a page (default 50, at most 500)")
	fs.StringVar(&opts.Filter.After, "after", "", "list: the page after this cursor (printed as 'more: --after ...')")
	fs.BoolVar(&opts.All, "all", false, "redrive, discard: every parked message, when no filter is given")
	fs.BoolVar(&opts.Force, "force", false, "redrive: also a message poisoned for a reused key or a bad signature")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "redrive, discard: print what would go, change nothing")
	fs.BoolVar(&opts.JSON, "json", false, "list: JSON instead of a table")
	fs.StringVar(&opts.ServiceURL, "service-url", "", "the running service's admin API (default from INTERNAL_ADDR, else HTTP_ADDR: http://127.0.0.1:8080)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return app.Poison(ctx, environ, opts, stdout)
}
