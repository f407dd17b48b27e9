package receiver

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// outcomeCancelled is how a span and a log line show an Execute call that
// ended with its context, before any outcome.
const outcomeCancelled = "cancelled"

// observe runs c with fn (see execute) and tells how it ended: its outcome to the
// Observer; with tracing on, as a span named "receiver" and the scope, with
// the scope, the key and the outcome as attributes (and the error, if
// any); and, when the logger takes debug lines, as one line "receiver
// decision" with the same scope, key, outcome and error. The store calls
// within are spans of their own (see observedStore). When fn panics, the
// state machine reports the call where it calls fn, as the panic goes on.
//
// The key appears as the store keeps it ([stores.StorageKey]): as sent
// when it is short, readable text, its SHA-256 otherwise. Keys are
// identifiers (a payment id, a client's request key), not credentials: an
// HTTP key is scoped to its client, so knowing it replays nothing to anyone
// else, and the API key that names the client is never part of it. Shown
// as stored, a key finds its record; a truncated key could name two.
func (r *Receiver) observe(ctx context.Context, c *call, fn handlerFunc) (Result, error) {
	if r.tracer != nil {
		ctx, c.span = r.tracer.Start(ctx, "receiver "+c.scope,
			trace.WithAttributes(AttrScope.String(c.scope), AttrKey.String(shown(c.k))))
		defer c.span.End()
	}
	res, err := r.execute(ctx, c, fn)
	r.report(ctx, c, res.Outcome, err)
	return res, err
}

// report tells how c ended: in outcome o ("" when its context ended first),
// with err.
func (r *Receiver) report(ctx context.Context, c *call, o Outcome, err error) {
	if o != "" {
		r.cfg.Observer.Outcome(c.scope, o)
	}
	debug := r.cfg.Logger.Enabled(ctx, slog.LevelDebug)
	if c.span == nil && !debug {
		return
	}
	outcome := string(o)
	if outcome == "" {
		outcome = outcomeCancelled
	}
	if c.span != nil {
		endSpan(c.span, outcome, outcome, err)
	}
	if debug {
		attrs := []any{"scope", c.scope, "key", shown(c.k), "outcome", outcome}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		r.cfg.Logger.Log(ctx, slog.LevelDebug, "receiver decision", attrs...)
	}
}
