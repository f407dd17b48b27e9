package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans go over OTLP/HTTP to its
// /v1/traces, from a service named SERVICE_NAME, and stopping the App
// flushes those still batched. API spans are named after their route, not
// their path; the probes are not traced.
func TestTracesExportedOverOTLP(t *testing.T) {
	t.Parallel()
	var collector otlpCollector
	srv := httptest.NewServer(&collector)
	defer srv.Close()
	a := startApp(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "SERVICE_NAME=traced")

	flowtest.PostOK(t, a, "req-otlp-1")
	waitFor(t, "the request noticed", func() bool { return flowtest.Tally(t, a).Notices.Rows == 1 })
	if code := a.Get(t, "/v1/charges/req-otlp-1", nil); code != http.StatusOK {
		t.Fatalf("GET: status %d", code)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}

	collector.mu.Lock()
	defer collector.mu.Unlock()
	for _, want := range []string{testdomain.CreatePattern, testdomain.ReadPattern, testdomain.ChargeRoute, testdomain.NotifyRoute} {
		if !slices.Contains(collector.spans, want) {
			t.Errorf("no span %q exported; got %q", want, collector.spans)
		}
	}
	for _, unwanted := range []string{"GET /readyz", "GET /v1/charges/req-otlp-1"} {
		if slices.Contains(collector.spans, unwanted) {
			t.Errorf("span %q exported; got %q", unwanted, collector.spans)
		}
	}
	if len(collector.paths) == 0 || slices.ContainsFunc(collector.paths, func(p string) bool { return p != "/v1/traces" }) {
		t.Errorf("exports to %q, want each to /v1/traces", collector.paths)
	}
	if len(collector.services) == 0 || slices.ContainsFunc(collector.services, func(s string) bool { return s != "traced" }) {
		t.Errorf("spans from services %q, want traced (SERVICE_NAME)", collector.services)
	}
}

// otlpCollector is the receiving end of OTLP/HTTP with protobuf bodies: it
// keeps the name of every span, and the path and service of every export.
type otlpCollector struct {
	mu       sync.Mutex
	spans    []string
	paths    []string
	queries  []string
	services []string
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, r.URL.Path)
	c.queries = append(c.queries, r.URL.RawQuery)
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				c.services = append(c.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, s.GetName())
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

// The SDK's errors, such as an export the collector refused, are the
// service's log lines, in its format.
func TestOTelErrorsAreLogged(t *testing.T) {
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Print(err) })) })
	var logs bytes.Buffer
	logOTelErrors(NewLogger(&logs, "info", "json"))
	otel.Handle(errors.New("exporting spans: 503"))
	var line struct{ Level, Msg, Err string }
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line.Level != "WARN" || line.Err != "exporting spans: 503" {
		t.Errorf("logged %q (%v): want one JSON warning with the error", logs.String(), err)
	}
}

// The OTLP exporter sends neither the query nor the user part of its
// endpoint's URL, so a collector's key put there (?api_key=) never reaches
// it: start-up says so, pointing at OTEL_EXPORTER_OTLP_HEADERS, and logs
// the key nowhere.
func TestOTLPEndpointCredentialsWarned(t *testing.T) {
	t.Parallel()
	var collector otlpCollector
	srv := httptest.NewServer(&collector)
	defer srv.Close()
	const key = "sEcReT-otlp-key"
	logs := &testenv.Buffer{}
	a := startAppLogging(t, seams{}, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL+"/?api_key="+key)
	flowtest.PostOK(t, a, "req-otlp-key")
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "OTEL_EXPORTER_OTLP_HEADERS") {
		t.Errorf("no warning that the endpoint's query is not sent: %s", logs.String())
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the log shows the collector's key: %s", logs.String())
	}
	collector.mu.Lock()
	defer collector.mu.Unlock()
	if len(collector.queries) == 0 || slices.ContainsFunc(collector.queries, func(q string) bool { return q != "" }) {
		t.Errorf("exports with queries %q, want some, each without a query (as the warning says)", collector.queries)
	}
}
