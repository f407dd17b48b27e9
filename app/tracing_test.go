package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/spantest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// One payment is one trace, from the API's request (continuing the
// caller's traceparent) through the broker into each handler: POST /v1/payments -> charge_payment -> notify_customer,
// each span the descendant of the one before, with the receiver's decisions
// and store calls within. Every log line of the handling carries the
// payment's correlation id and the trace id.
//
// In transaction mode the API's message goes through the outbox and its
// relay: two publish spans, the relay's the child of the outbox write's.
func TestTraceFollowsOnePayment(t *testing.T) {
	for name, environ := range map[string]func(t *testing.T) []string{
		"gochannel": func(*testing.T) []string { return nil },
		"amqp":      func(t *testing.T) []string { env, _, _ := amqpAppEnv(t); return env },
		"outbox relay": func(t *testing.T) []string {
			return []string{"STORE=postgres", "DEDUP_MODE=transaction", "DATABASE_URL=" + testenv.PostgresSchema(t)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			logs := &testenv.Buffer{}
			logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			a := startAppLogging(t, seams{spans: spans}, logger, environ(t)...)

			const correlation, traceID = "corr-trace-1", "4bf92f3577b34da6a3ce929d0e0e4736"
			if code := a.post(t, "/v1/payments", paymentBody("pay-trace-1"), handlers.CorrelationIDHeader, correlation,
				"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"); code != http.StatusAccepted {
				t.Fatalf("POST: status %d", code)
			}
			waitFor(t, "the payment notified", func() bool { return a.summary(t).Notifications == 1 })
			chain := []string{"POST /v1/payments", "receiver http", "publish " + handlers.TopicPaymentRequested,
				handlers.ChargePaymentHandler, "receiver " + handlers.ChargePaymentHandler,
				"publish " + handlers.TopicPaymentCharged, handlers.NotifyCustomerHandler, "receiver " + handlers.NotifyCustomerHandler}
			// A span ends after those it contains, and a publish span may
			// end after its consumer's.
			waitFor(t, "every span of the chain, and issue_receipt's decision", func() bool {
				return spantest.New(spans.GetSpans()).Has(append(chain, "receiver "+handlers.IssueReceiptHandler)...)
			})

			got := spantest.New(spans.GetSpans())
			request := got.Named(t, "POST /v1/payments")
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
			if want, n := map[bool]int{false: 1, true: 2}[name == "outbox relay"], len(got.All("publish "+handlers.TopicPaymentRequested)); n != want {
				t.Errorf("%d spans publish %s, want %d", n, handlers.TopicPaymentRequested, want)
			}
			for _, h := range []string{handlers.ChargePaymentHandler, handlers.NotifyCustomerHandler} {
				if o := spantest.Attr(got.Named(t, "receiver "+h), receiver.AttrOutcome); o != string(receiver.OutcomeProcessed) {
					t.Errorf("receiver %s: outcome %q, want processed", h, o)
				}
			}
			if n := len(got.All("store claim")); n < 4 { // http, charge_payment, notify_customer, issue_receipt
				t.Errorf("%d store claim spans, want one per decision", n)
			}

			handled := handlingLines(t, logs, handlers.ChargePaymentHandler, handlers.NotifyCustomerHandler)
			for _, l := range handled {
				if l.CorrelationID != correlation || l.TraceID != request.SpanContext.TraceID().String() {
					t.Errorf("log line %q (%s): correlation_id %q, trace_id %q: want %q and the request's trace %s",
						l.Msg, l.Scope, l.CorrelationID, l.TraceID, correlation, request.SpanContext.TraceID())
				}
			}
			if len(handled) < 4 { // a decision and a line of its own for each handler
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
// handlers named: their receiver decisions and the handlers' own lines,
// with the API's line that published the message.
func handlingLines(t *testing.T, logs *testenv.Buffer, names ...string) []logLine {
	t.Helper()
	own := map[string]bool{"payment accepted": true, "payment charged": true, "customer notified": true}
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
		if code := a.post(t, "/v1/payments", paymentBody("pay-untraced"), header...); code != http.StatusUnauthorized {
			t.Fatalf("POST with Authorization %q: %d, want 401", auth, code)
		}
	}
	if code := a.post(t, "/v1/payments", paymentBody("pay-traced"), "Authorization", "Bearer "+key); code != http.StatusAccepted {
		t.Fatalf("POST with the key: %d, want 202", code)
	}
	waitFor(t, "the authenticated request's span", func() bool { return spantest.New(spans.GetSpans()).Has("POST /v1/payments") })
	got := spantest.New(spans.GetSpans())
	if n := len(got.All("POST /v1/payments")); n != 1 {
		t.Errorf("%d spans of POST /v1/payments, want 1: the refused requests' none", n)
	}
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %q continues the refused requests' traceparent", s.Name)
		}
	}
}
