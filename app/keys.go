package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/onceflow/onceflow/admin"
)

// KeysOptions are the flags of `onceflow keys`.
type KeysOptions struct {
	// Action is get, release or evict.
	Action string
	// Target names the record.
	Target admin.Target
	// Force releases a key whose owner holds a live lease.
	Force bool
	// ServiceURL is the running service's key admin (default from
	// INTERNAL_ADDR, else HTTP_ADDR).
	ServiceURL string
}

// Keys runs one key admin action on the running service's /admin API with
// the operator's own key (OPERATOR_API_KEY, else ADMIN_API_KEY), which
// names them in the service's log, and writes the record, as read before
// the action, to out as indented JSON.
func Keys(ctx context.Context, environ []string, opts KeysOptions, out io.Writer) error {
	c, err := operatorClient(environ, opts.ServiceURL)
	if err != nil {
		return err
	}
	var rec admin.Record
	switch opts.Action {
	case "get":
		rec, err = c.Get(ctx, opts.Target)
	case "release":
		rec, err = c.Release(ctx, opts.Target, opts.Force)
	case "evict":
		rec, err = c.Evict(ctx, opts.Target)
	default:
		return fmt.Errorf("unknown keys action %q: use get, release or evict", opts.Action)
	}
	if err != nil {
		return fmt.Errorf("keys %s: %w", opts.Action, err)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rec)
}
