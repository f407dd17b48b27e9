package tracecontext_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/spantest"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/tracecontext"
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
	tr := tracecontext.New(tp, propagation.TraceContext{})
	r, _ := receivertest.NewReceiver(t, receiver.Config{TracerProvider: tp})
	ps := receivertest.PubSub(t, true)
	pub := tr.Publisher(ps)

	router := receivertest.Router(t)
	router.AddMiddleware(tr.Consume, consume.Middleware(r), tr.Produce)
	router.AddHandler("first", "in", ps, "mid", pub, func(msg *message.Message) ([]*message.Message, error) {
		return []*message.Message{receivertest.Keyed("out-"+msg.UUID, "k-out", "produced")}, nil
	})
	second := make(chan struct{}, 4)
	router.AddConsumerHandler("second", "mid", ps, func(*message.Message) error {
		second <- struct{}{}
		return nil
	})
	receivertest.Run(t, router)

	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	msg := receivertest.Keyed("m-1", "k-1", "payload")
	msg.SetContext(ctx)
	receivertest.Publish(t, pub, "in", msg)
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
	if o := spantest.Attr(got.Named(t, "receiver first"), receiver.AttrOutcome); o != string(receiver.OutcomeProcessed) {
		t.Errorf("receiver first: outcome %q, want processed", o)
	}
	// One claim per handler, each acquired within its handler's receiver span.
	claims := got.All("store claim")
	if len(claims) != 2 {
		t.Errorf("%d store claim spans, want one per handler", len(claims))
	}
	for _, claim := range claims {
		if o := spantest.Attr(claim, receiver.AttrOutcome); o != "acquired" || !got.Descends(claim, got.Named(t, "receiver first")) && !got.Descends(claim, got.Named(t, "receiver second")) {
			t.Errorf("store claim: outcome %q, parent %v: want acquired within a receiver span", o, claim.Parent.SpanID())
		}
	}
	if o := spantest.Attr(got.Named(t, "second"), receiver.AttrOutcome); o != "ack" {
		t.Errorf("second: outcome %q, want ack", o)
	}

	spans.Reset()
	// A copy of m-1 with a new UUID; the blocking publish returns once
	// "first" acked it.
	receivertest.Publish(t, pub, "in", receivertest.Keyed("m-2", "k-1", "payload"))
	dup := spantest.New(spans.GetSpans())
	if o := spantest.Attr(dup.Named(t, "receiver first"), receiver.AttrOutcome); o != string(receiver.OutcomeDuplicate) {
		t.Errorf("the copy's decision: outcome %q, want duplicate", o)
	}
}

// A handler that panics ends its span as a nack with the panic, and the
// panic reaches the recoverer outside.
func TestTracingRecordsAPanic(t *testing.T) {
	t.Parallel()
	tp, spans := newTraced(t)
	tr := tracecontext.New(tp, propagation.TraceContext{})
	ps := receivertest.PubSub(t, false)
	router := receivertest.Router(t)
	router.AddMiddleware(middleware.Recoverer, tr.Consume)
	router.AddConsumerHandler("panics", "in", ps, func(*message.Message) error { panic("boom") })
	receivertest.Run(t, router)
	receivertest.Publish(t, ps, "in", receivertest.Keyed("m-1", "k-1", "payload"))

	testenv.WaitFor(t, receivertest.WaitTimeout, "the span of the panic", func() bool { return len(spans.GetSpans()) > 0 })
	// The router retries the panicking handler until the test ends: every
	// attempt is a span; the first one tells.
	attempts := spantest.New(spans.GetSpans()).All("panics")
	if len(attempts) == 0 {
		t.Fatal("no span of the panicking handler")
	}
	s := attempts[0]
	if o := spantest.Attr(s, receiver.AttrOutcome); o != "nack" || s.Status.Code != codes.Error || s.Status.Description != "panic: boom" {
		t.Errorf("span of a panic: outcome %q, status %v %q: want nack, Error, panic: boom", o, s.Status.Code, s.Status.Description)
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(receivertest.WaitTimeout):
		t.Fatal("the second handler did not run")
	}
}
