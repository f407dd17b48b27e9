package receiver

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/stores"
)

// observedStore is a store whose every call is timed for the Observer
// (StoreLatency, op "claim", "complete", "release" or "extend") and, with
// tracing on, a span named "store" and the op ("store claim") within the
// caller's span, ending with its onceflow.outcome: the claim's status, ok,
// lease_lost or error.
type observedStore struct {
	next   stores.Store
	obs    Observer     // nil: calls are not timed
	tracer trace.Tracer // nil: no spans
}

var _ stores.Store = (*observedStore)(nil)

// observed returns s observed as the receiver's config asks: s itself when
// it sets neither an Observer nor a TracerProvider, as reading the clock is
// a cost of its own on the message path.
func (r *Receiver) observed(s stores.Store) stores.Store {
	if !r.timing && r.tracer == nil {
		return s
	}
	o := &observedStore{next: s, tracer: r.tracer}
	if r.timing {
		o.obs = r.cfg.Observer
	}
	return o
}

func (s *observedStore) Claim(ctx context.Context, key string, fp []byte, lease time.Duration) (stores.Claim, error) {
	ctx, span, start := s.begin(ctx, "store claim")
	c, err := s.next.Claim(ctx, key, fp, lease)
	s.end("claim", span, start, c.Status.String(), err)
	return c, err
}

func (s *observedStore) Complete(ctx context.Context, key string, t stores.Token, result []byte, ttl time.Duration) error {
	ctx, span, start := s.begin(ctx, "store complete")
	err := s.next.Complete(ctx, key, t, result, ttl)
	s.end("complete", span, start, "ok", err)
	return err
}

func (s *observedStore) Release(ctx context.Context, key string, t stores.Token) error {
	ctx, span, start := s.begin(ctx, "store release")
	err := s.next.Release(ctx, key, t)
	s.end("release", span, start, "ok", err)
	return err
}

func (s *observedStore) Extend(ctx context.Context, key string, t stores.Token, lease time.Duration) (time.Time, error) {
	ctx, span, start := s.begin(ctx, "store extend")
	end, err := s.next.Extend(ctx, key, t, lease)
	s.end("extend", span, start, "ok", err)
	return end, err
}

// begin starts a call: its span within ctx, if tracing is on, and its
// clock, if the Observer times calls.
func (s *observedStore) begin(ctx context.Context, name string) (context.Context, trace.Span, time.Time) {
	var span trace.Span
	if s.tracer != nil {
		ctx, span = s.tracer.Start(ctx, name)
	}
	var start time.Time
	if s.obs != nil {
		start = time.Now()
	}
	return ctx, span, start
}

// end ends the call op that begin started, with outcome, or with error
// (lease_lost or error) and err.
func (s *observedStore) end(op string, span trace.Span, start time.Time, outcome string, err error) {
	if s.obs != nil {
		s.obs.StoreLatency(op, time.Since(start))
	}
	if span != nil {
		endSpan(span, outcome, storeOutcome(err), err)
		span.End()
	}
}

// storeOutcome is the outcome of a failed store call: lease_lost or error.
func storeOutcome(err error) string {
	if errors.Is(err, stores.ErrLeaseLost) {
		return string(OutcomeLeaseLost)
	}
	return "error"
}
