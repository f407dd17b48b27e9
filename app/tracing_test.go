package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/spantest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/transport"
)

// One request is one trace, from the API's request (continuing the
// caller's traceparent) through the broker into each route: POST
// /v1/charges -> charge -> notify, each span the descendant of the one
// before, with the receiver's decisions and store calls within. Every log
// line of the handling carries the request's correlation id and the trace
// id. The trace crosses the in-process broker and RabbitMQ (when the build
// has it), whose headers carry it.
//
// In transaction mode the API's message goes through the outbox and its
// relay: two publish spans, the relay's the child of the outbox write's.
func TestTraceFollowsOneRequest(t *testing.T) {
	for name, environ := range map[string]func(t *testing.T) []string{
		"gochannel": func(*testing.T) []string { return nil },
		"amqp":      func(t *testing.T) []string { return serviceEnv(t, transport.AMQP) },
		"outbox relay": func(t *testing.T) []string {
			return []string{"STORE=postgres", "DEDUP_MODE=transaction", "DATABASE_URL=" + testenv.PostgresSchema(t)}
		},
	} {
		if name == transport.AMQP && !builtIn(transport.AMQP) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			logs := &testenv.Buffer{}
			logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			a := startAppLogging(t, seams{spans: spans}, logger, environ(t)...)

			const correlation, traceID = "corr-trace-1", "4bf92f3577b34da6a3ce929d0e0e4736"
			flowtest.PostOK(t, a, "req-trace-1", testdomain.CorrelationHeader, correlation,
				"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
			waitFor(t, "the request noticed", func() bool { return flowtest.Tally(t, a).Notices.Rows == 1 })
			chain := []string{testdomain.CreatePattern, "receiver http", "publish " + testdomain.TopicRequested,
				testdomain.ChargeRoute, "receiver " + testdomain.ChargeRoute,
				"publish " + testdomain.TopicCharged, testdomain.NotifyRoute, "receiver " + testdomain.NotifyRoute}
			// A span ends after those it contains, and a publish span may
			// end after its consumer's.
			// A span is exported when it ends: wait for each link of the
			// chain, not only each name (the outbox's two publish spans of
			// an event end apart, and the consumer's parent may be the later).
			waitFor(t, "every span of the chain, each below the one before, and the receipt route's decision", func() bool {
				got := spantest.New(spans.GetSpans())
				for i := 1; i < len(chain); i++ {
					if !got.AnyDescends(chain[i], chain[i-1]) {
						return false
					}
				}
				return got.Has(append(chain, "receiver "+testdomain.ReceiptRoute)...)
			})

			got := spantest.New(spans.GetSpans())
			request := got.Named(t, testdomain.CreatePattern)
			if id := request.SpanContext.TraceID().String(); id != traceID {
				t.Errorf("the request's span is in trace %s, want the caller's traceparent's %s", id, traceID)
			}
			for i, name := range chain {
				for _, s := range got.All(name) {
					if s.SpanContext.TraceID() != request.SpanContext.TraceID() {
						t.Errorf("span %q is in trace %s, want the request's %s", name, s.SpanContext.TraceID(), request.SpanContext.TraceID())
					}
				}
				if i > 0 && !got.AnyDescends(name, chain[i-1]) {
					t.Errorf("no span %q descends from a span %q", name, chain[i-1])
				}
			}
			if want, n := map[bool]int{false: 1, true: 2}[name == "outbox relay"], len(got.All("publish "+testdomain.TopicRequested)); n != want {
				t.Errorf("%d spans publish %s, want %d", n, testdomain.TopicRequested, want)
			}
			for _, h := range []string{testdomain.ChargeRoute, testdomain.NotifyRoute} {
				if o := spantest.Attr(got.Named(t, "receiver "+h), receiver.AttrOutcome); o != string(receiver.OutcomeProcessed) {
					t.Errorf("receiver %s: outcome %q, want processed", h, o)
				}
			}
			if n := len(got.All("store claim")); n < 4 { // http, charge, notify, receipt
				t.Errorf("%d store claim spans, want one per decision", n)
			}

			handled := handlingLines(t, logs, testdomain.ChargeRoute, testdomain.NotifyRoute)
			for _, l := range handled {
				if l.CorrelationID != correlation || l.TraceID != request.SpanContext.TraceID().String() {
					t.Errorf("log line %q (%s): correlation_id %q, trace_id %q: want %q and the request's trace %s",
						l.Msg, l.Scope, l.CorrelationID, l.TraceID, correlation, request.SpanContext.TraceID())
				}
			}
			if len(handled) < 4 { // a decision and a line of its own for each route
				t.Errorf("%d log lines of the handling, want at least 4: %s", len(handled), logs.String())
			}
		})
	}
}

// logLine is what the tracing test reads of a JSON log line.
type logLine struct {
	Msg           string `json:"msg"`
	Scope         string `json:"scope"`
	Key           string `json:"key"`
	Outcome       string `json:"outcome"`
	CorrelationID string `json:"correlation_id"`
	TraceID       string `json:"trace_id"`
}

// handlingLines are the log lines of the handling of a message by the
// routes named: their receiver decisions and the routes' own lines, with
// the API's line that published the message.
func handlingLines(t *testing.T, logs *testenv.Buffer, names ...string) []logLine {
	t.Helper()
	own := map[string]bool{"request accepted": true, "request charged": true, "request's notice recorded": true}
	var lines []logLine
	for line := range bytes.Lines([]byte(logs.String())) {
		var l logLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		for _, n := range names {
			if (l.Msg == "receiver decision" && l.Scope == n) || own[l.Msg] {
				lines = append(lines, l)
				break
			}
		}
	}
	return lines
}

// A request refused for its API key starts no span: whoever has no key
// cannot fill the trace backend, nor continue a trace of their choosing.
// An authenticated one is traced as before.
func TestUnauthenticatedRequestsAreNotTraced(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	const key = "key-of-client-a-0123456789"
	a := startAppWith(t, seams{spans: spans}, "API_KEYS="+key+":client-a")
	traceparent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, auth := range []string{"", "Bearer wrong-key-0123456789"} {
		header := []string{"traceparent", traceparent}
		if auth != "" {
			header = append(header, "Authorization", auth)
		}
		if code := a.Post(t, flowtest.CreatePath, flowtest.Body("req-untraced"), header...); code != http.StatusUnauthorized {
			t.Fatalf("POST with Authorization %q: %d, want 401", auth, code)
		}
	}
	flowtest.PostOK(t, a, "req-traced", "Authorization", "Bearer "+key)
	waitFor(t, "the authenticated request's span", func() bool { return spantest.New(spans.GetSpans()).Has(testdomain.CreatePattern) })
	got := spantest.New(spans.GetSpans())
	if n := len(got.All(testdomain.CreatePattern)); n != 1 {
		t.Errorf("%d spans of %s, want 1: the refused requests' none", n, testdomain.CreatePattern)
	}
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %q continues the refused requests' traceparent", s.Name)
		}
	}
}
