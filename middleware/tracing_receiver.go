package middleware

import (
	"context"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/stores"
)

// outcomeCancelled is how a span and a log line show an Execute call that
// ended with its context, before any outcome.
const outcomeCancelled = "cancelled"

// executeObserved is execute in a span named "receiver" and the scope when
// tracing is on, with the scope, the key and, once decided, the outcome as
// attributes (and the error, if any), followed, when debug says the logger
// takes debug lines, by one line "receiver decision" with the same scope,
// key, outcome and error. The store calls within are spans of their own.
//
// The key appears as the store keeps it ([stores.StorageKey]): as sent
// when it is short, readable text, its SHA-256 otherwise. Keys are
// identifiers (a payment id, a client's request key), not credentials: an
// HTTP key is scoped to its client, so knowing it replays nothing to anyone
// else, and the API key that names the client is never part of it. Shown
// as stored, a key finds its record; a truncated key could name two.
func (r *Receiver) executeObserved(ctx context.Context, scope, k string, debug bool, fingerprint []byte,
	fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	key := shown(k)
	var span trace.Span
	if r.tracer != nil {
		ctx, span = r.tracer.Start(ctx, "receiver "+scope,
			trace.WithAttributes(AttrScope.String(scope), AttrKey.String(key)))
		defer span.End()
	}
	res, err := r.execute(ctx, scope, k, fingerprint, fn)
	outcome := string(res.Outcome)
	if outcome == "" {
		outcome = outcomeCancelled
	}
	if span != nil {
		endSpan(span, outcome, outcome, err)
	}
	if debug {
		attrs := []any{"scope", scope, "key", key, "outcome", outcome}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		r.cfg.Logger.Log(ctx, slog.LevelDebug, "receiver decision", attrs...)
	}
	return res, err
}

// storeSpan starts the span of one store call, named "store" and the
// operation ("store claim"), within ctx; with tracing off it returns ctx
// and a nil span.
func (r *Receiver) storeSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, nil
	}
	return r.tracer.Start(ctx, name)
}

// endStoreSpan ends span, if any, with outcome, or with error and err.
func endStoreSpan(span trace.Span, outcome string, err error) {
	if span == nil {
		return
	}
	endSpan(span, outcome, storeOutcome(err), err)
	span.End()
}

// storeOutcome is the outcome of a failed store call: lease_lost or error.
func storeOutcome(err error) string {
	if errors.Is(err, stores.ErrLeaseLost) {
		return string(OutcomeLeaseLost)
	}
	return "error"
}
