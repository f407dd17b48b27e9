package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/onceflow/onceflow/internal/spantest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// newTraced returns a tracer provider that hands every ended span to the
// returned exporter at once.
func newTraced(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, spans
}

// A message published in a trace is handled in it: the first handler's
// span, its receiver decision and store calls, the message it produces and
// the second handler's span all belong to the publisher's trace, each the
// descendant of the one before. A duplicate is a decision of its own.
func TestTracingFollowsMessagesThroughHandlers(t *testing.T) {
	t.Parallel()
	tp, spans := newTraced(t)
	tr := NewTracing(tp, propagation.TraceContext{})
	r, _ := newReceiver(t, Config{TracerProvider: tp})
	ps := newPubSub(t, true)
	pub := tr.Publisher(ps)

	router := newRouter(t)
	router.AddMiddleware(tr.Consume, r.Middleware(), tr.Produce)
	router.AddHandler("first", "in", ps, "mid", pub, func(msg *message.Message) ([]*message.Message, error) {
		return []*message.Message{keyed("out-"+msg.UUID, "k-out", "produced")}, nil
	})
	second := make(chan struct{}, 4)
	router.AddConsumerHandler("second", "mid", ps, func(*message.Message) error {
		second <- struct{}{}
		return nil
	})
	run(t, router)

	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	msg := keyed("m-1", "k-1", "payload")
	msg.SetContext(ctx)
	publish(t, pub, "in", msg)
	root.End()
	waitSignal(t, second)

	got := spantest.New(spans.GetSpans())
	want := root.SpanContext().TraceID()
	chain := []string{"request", "publish in", "first", "receiver first", "publish mid", "second", "receiver second"}
	for i, name := range chain {
		s := got.Named(t, name)
		if s.SpanContext.TraceID() != want {
			t.Errorf("span %q is in trace %s, want the publisher's %s", name, s.SpanContext.TraceID(), want)
		}
		if i > 0 && !got.Descends(s, got.Named(t, chain[i-1])) {
			t.Errorf("span %q does not descend from %q", name, chain[i-1])
		}
	}
	if o := spantest.Attr(got.Named(t, "receiver first"), AttrOutcome); o != string(OutcomeProcessed) {
		t.Errorf("receiver first: outcome %q, want processed", o)
	}
	// One claim per handler, each acquired within its handler's receiver span.
	claims := got.All("store claim")
	if len(claims) != 2 {
		t.Errorf("%d store claim spans, want one per handler", len(claims))
	}
	for _, claim := range claims {
		if o := spantest.Attr(claim, AttrOutcome); o != "acquired" || !got.Descends(claim, got.Named(t, "receiver first")) && !got.Descends(claim, got.Named(t, "receiver second")) {
			t.Errorf("store claim: outcome %q, parent %v: want acquired within a receiver span", o, claim.Parent.SpanID())
		}
	}
	if o := spantest.Attr(got.Named(t, "second"), AttrOutcome); o != "ack" {
		t.Errorf("second: outcome %q, want ack", o)
	}

	spans.Reset()
	// A copy of m-1 with a new UUID; the blocking publish returns once
	// "first" acked it.
	publish(t, pub, "in", keyed("m-2", "k-1", "payload"))
	dup := spantest.New(spans.GetSpans())
	if o := spantest.Attr(dup.Named(t, "receiver first"), AttrOutcome); o != string(OutcomeDuplicate) {
		t.Errorf("the copy's decision: outcome %q, want duplicate", o)
	}
}

// A handler that panics ends its span as a nack with the panic, and the
// panic reaches the recoverer outside.
func TestTracingRecordsAPanic(t *testing.T) {
	t.Parallel()
	tp, spans := newTraced(t)
	tr := NewTracing(tp, propagation.TraceContext{})
	ps := newPubSub(t, false)
	router := newRouter(t)
	router.AddMiddleware(wmmw.Recoverer, tr.Consume)
	router.AddConsumerHandler("panics", "in", ps, func(*message.Message) error { panic("boom") })
	run(t, router)
	publish(t, ps, "in", keyed("m-1", "k-1", "payload"))

	testenv.WaitFor(t, waitTimeout, "the span of the panic", func() bool { return len(spans.GetSpans()) > 0 })
	// The router retries the panicking handler until the test ends: every
	// attempt is a span; the first one tells.
	attempts := spantest.New(spans.GetSpans()).All("panics")
	if len(attempts) == 0 {
		t.Fatal("no span of the panicking handler")
	}
	s := attempts[0]
	if o := spantest.Attr(s, AttrOutcome); o != "nack" || s.Status.Code != codes.Error || s.Status.Description != "panic: boom" {
		t.Errorf("span of a panic: outcome %q, status %v %q: want nack, Error, panic: boom", o, s.Status.Code, s.Status.Description)
	}
}

// Every decision is one debug line with the scope, the key as stored and
// the outcome; with tracing on, the line's context carries the decision's
// span.
func TestReceiverLogsEachDecisionAtDebug(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	r, err := NewReceiver(Config{Store: newMemory(t),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context) ([]byte, error) { return []byte("done"), nil }
	for range 2 {
		if _, err := r.Execute(context.Background(), "charge_payment", "pay-1", []byte("fp"), fn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Execute(context.Background(), "charge_payment", "pay-1", []byte("other"), fn); err == nil {
		t.Fatal("a reused key succeeded")
	}
	var outcomes []string
	for line := range bytes.Lines(logs.Bytes()) {
		var l struct{ Level, Msg, Scope, Key, Outcome, Err string }
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Msg != "receiver decision" || l.Level != "DEBUG" || l.Scope != "charge_payment" || l.Key != "charge_payment:pay-1" {
			t.Errorf("log line %s: want a debug receiver decision on charge_payment:pay-1", line)
		}
		if (l.Err != "") != (l.Outcome == string(OutcomeFingerprintMismatch)) {
			t.Errorf("log line %s: want an error on the mismatch only", line)
		}
		outcomes = append(outcomes, l.Outcome)
	}
	want := []string{"processed", "duplicate", "fingerprint_mismatch"}
	if len(outcomes) != len(want) || outcomes[0] != want[0] || outcomes[1] != want[1] || outcomes[2] != want[2] {
		t.Errorf("decisions logged: %v, want %v", outcomes, want)
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatal("the second handler did not run")
	}
}
