package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/poison"
)

// PoisonOptions are the flags of `onceflow poison`.
type PoisonOptions struct {
	// Action is list, show, redrive or discard.
	Action string
	// ID names one parked message (show, and redrive or discard of one).
	ID string
	// Filter selects the messages of list, and of redrive or discard
	// without ID, with Class, State, Since and Until.
	Filter poison.Filter
	// Class and State, when set, name the Filter's (State "all": every
	// state); Since and Until its times, in RFC 3339 or as a duration
	// before now (such as 2h).
	Class, State, Since, Until string
	// All lets redrive or discard act on every parked message when Filter
	// selects no field: without it they refuse, so that a forgotten flag
	// does not redrive everything.
	All bool
	// Force redrives a message poisoned for a reused key or a bad
	// signature.
	Force bool
	// DryRun, for redrive and discard, prints what would go and changes
	// nothing.
	DryRun bool
	// JSON prints list as JSON instead of a table.
	JSON bool
	// ServiceURL is the running service's admin API (default from
	// INTERNAL_ADDR, else HTTP_ADDR).
	ServiceURL string
}

// Poison runs one action of the poison console on the running service's
// /admin/poison with the operator's own key (OPERATOR_API_KEY, else
// ADMIN_API_KEY) and writes what it read or did to out.
func Poison(ctx context.Context, environ []string, opts PoisonOptions, out io.Writer) error {
	if err := opts.parseFilter(time.Now()); err != nil {
		return err
	}
	c, err := operatorClient(environ, opts.ServiceURL)
	if err != nil {
		return err
	}
	var v any
	switch opts.Action {
	case "list":
		p, err := c.Poisoned(ctx, opts.Filter)
		if err != nil {
			return fmt.Errorf("poison list: %w", err)
		}
		if !opts.JSON {
			return writePoisonTable(out, p, time.Now())
		}
		v = p
	case "show":
		if opts.ID == "" {
			return errors.New("poison show needs --id")
		}
		m, err := c.PoisonedMessage(ctx, opts.ID)
		if err != nil {
			return fmt.Errorf("poison show: %w", err)
		}
		return writePoisonMessage(out, m)
	case "redrive", "discard":
		if v, err = settle(ctx, c, opts); err != nil {
			return fmt.Errorf("poison %s: %w", opts.Action, err)
		}
	default:
		return fmt.Errorf("unknown poison action %q: use list, show, redrive or discard", opts.Action)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// settle redrives or discards the message of opts.ID, or those of
// opts.Filter.
func settle(ctx context.Context, c *admin.Client, opts PoisonOptions) (any, error) {
	redrive := opts.Action == "redrive"
	if opts.ID != "" {
		if opts.DryRun {
			return nil, errors.New("--dry-run applies to a filter: show the message with `onceflow poison show --id` instead")
		}
		if redrive {
			return c.Redrive(ctx, opts.ID, opts.Force)
		}
		return c.Discard(ctx, opts.ID)
	}
	f := opts.Filter
	if f.Handler == "" && f.Topic == "" && f.Class == "" && f.Since.IsZero() && f.Until.IsZero() && !opts.All {
		return nil, errors.New("name a message (--id), a filter (--handler, --topic, --class, --since, --until), or --all")
	}
	if redrive {
		return c.RedriveAll(ctx, f, opts.Force, opts.DryRun)
	}
	return c.DiscardAll(ctx, f, opts.DryRun)
}

// operatorClient is the admin API's client with the operator's own key.
func operatorClient(environ []string, serviceURL string) (*admin.Client, error) {
	cfg, err := LoadConfig(environ)
	if err != nil {
		return nil, err
	}
	key := cfg.OperatorAPIKey
	if key == "" {
		key = cfg.AdminAPIKey
	}
	if key == "" {
		return nil, errors.New("OPERATOR_API_KEY is required: your own key of the service's ADMIN_API_KEYS, which names you in its log")
	}
	if serviceURL == "" {
		if serviceURL, err = cfg.InternalURL(); err != nil {
			return nil, err
		}
	}
	return &admin.Client{BaseURL: serviceURL, APIKey: key}, nil
}

// writePoisonTable writes a page of parked messages as a table, the next
// page's cursor last.
func writePoisonTable(out io.Writer, p admin.Page, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGE\tSTATE\tHANDLER\tCLASS\tTOPIC\tKEY\tREASON")
	for _, m := range p.Messages {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, now.Sub(m.ParkedAt).Round(time.Second), m.State,
			m.Handler, m.Class, m.Topic, m.Key, poison.Clip(m.Reason, 80))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if p.Next != "" {
		_, err := fmt.Fprintf(out, "more: --after %s\n", p.Next)
		return err
	}
	return nil
}

// writePoisonMessage writes a parked message's fields and metadata as
// JSON, then its payload as an operator reads it (Message.PayloadText).
func writePoisonMessage(out io.Writer, m poison.Message) error {
	text, size := m.PayloadText(), len(m.Payload)
	m.Payload = nil
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "payload (%d bytes):\n%s\n", size, text)
	return err
}

// parseFilter sets opts.Filter's class, state and times from their flags.
func (opts *PoisonOptions) parseFilter(now time.Time) (err error) {
	f := &opts.Filter
	if opts.Class != "" {
		if f.Class, err = poison.ParseClass(opts.Class); err != nil {
			return err
		}
	}
	if opts.State == string(poison.All) {
		f.State = poison.All
	} else if opts.State != "" {
		if f.State, err = poison.ParseState(opts.State); err != nil {
			return err
		}
	}
	if f.Since, err = parseWhen("since", opts.Since, now); err != nil {
		return err
	}
	f.Until, err = parseWhen("until", opts.Until, now)
	return err
}

// parseWhen reads a time flag: RFC 3339, or a duration before now.
func parseWhen(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s=%s is neither a time (RFC 3339, such as 2026-03-01T12:00:00Z) nor a duration (such as 2h)", name, v)
	}
	return t, nil
}
