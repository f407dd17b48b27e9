package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
)

// running is an App started by startApp.
type running struct {
	*App
	base string
	// ops is the base URL of /metrics and the probes: base, or the
	// internal server's when INTERNAL_ADDR is set.
	ops  string
	stop func() error // cancels Run and returns its error
}

// startApp runs a real App on a loopback port until the test ends.
func startApp(t *testing.T, environ ...string) *running {
	t.Helper()
	return startAppWith(t, seams{}, environ...)
}

// startAppWith is startApp with the App's test seams set.
func startAppWith(t *testing.T, sm seams, environ ...string) *running {
	t.Helper()
	return startAppLogging(t, sm, testLogger(t), environ...)
}

// startAppLogging is startAppWith logging to logger.
func startAppLogging(t *testing.T, sm seams, logger *slog.Logger, environ ...string) *running {
	t.Helper()
	return startDomain(t, payments.Domain(), sm, logger, environ...)
}

// testLogger logs warnings and errors to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startDomain is startAppLogging running the domain d.
func startDomain(t *testing.T, d domain.Domain, sm seams, logger *slog.Logger, environ ...string) *running {
	t.Helper()
	// A pool of 8 connections, as the fault suite's instances have: make
	// test runs three packages side by side, all within PostgreSQL's 100.
	environ = append(anonymousUnlessKeys(environ, "HTTP_ADDR=127.0.0.1:0", "LOG_LEVEL=warn", "RETRY_INTERVAL=10ms",
		"DATABASE_MAX_CONNS=8"), environ...)
	cfg, err := LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(context.Background(), cfg, d, logger, sm)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, a)
}

// run runs a until the test ends and returns it once ready.
func run(t *testing.T, a *App) *running {
	t.Helper()
	r := &running{App: a, base: "http://" + a.Addr(), stop: testenv.Run(t, a)}
	r.ops = r.base
	if addr := a.InternalAddr(); addr != "" {
		r.ops = "http://" + addr
	}
	waitFor(t, "app ready", func() bool { return testenv.GetJSON(t, r.ops+"/readyz", nil) == http.StatusOK })
	return r
}

// anonymousUnlessKeys is defaults, with ALLOW_ANONYMOUS=true unless
// environ sets API_KEYS: a test that calls the API without keys means to,
// as apptest.Start assumes.
func anonymousUnlessKeys(environ []string, defaults ...string) []string {
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "API_KEYS=") }) {
		defaults = append(defaults, "ALLOW_ANONYMOUS=true")
	}
	return defaults
}

// post sends body to path with the given headers and returns the status.
// Each call sends a fresh Idempotency-Key unless header sets one, so each
// call is a new request to the API, like each copy that publish sends.
func (r *running) post(t *testing.T, path, body string, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", path, err)
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// get fetches path, decoding a JSON body into v when v is not nil.
func (r *running) get(t *testing.T, path string, v any) int {
	t.Helper()
	return testenv.GetJSON(t, r.base+path, v)
}

// summary is GET /v1/ledger/summary.
type summary struct {
	Payments      int `json:"payments"`
	Charges       int `json:"charges"`
	Notifications int `json:"notifications"`
}

func (r *running) summary(t *testing.T) summary {
	t.Helper()
	var s summary
	if code := r.get(t, "/v1/ledger/summary", &s); code != http.StatusOK {
		t.Fatalf("summary: status %d", code)
	}
	return s
}

// receipts is the receipts count of GET /v1/ledger/summary. It is apart
// from summary, whose comparisons are about the charges and notifications
// that the tests wait for.
func (r *running) receipts(t *testing.T) int {
	t.Helper()
	var s struct {
		Receipts int `json:"receipts"`
	}
	if code := r.get(t, "/v1/ledger/summary", &s); code != http.StatusOK {
		t.Fatalf("summary: status %d", code)
	}
	return s.Receipts
}

// metric returns the sum of the counter or gauge name over the series whose
// labels include every pair in labels.
func (r *running) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	return r.scrape(t).value(name, labels...)
}

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 20*time.Second, what, cond)
}

// waitForWithin polls cond until it holds, failing the test after limit.
func waitForWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, limit, what, cond)
}

func paymentBody(id string) string {
	return fmt.Sprintf(`{"payment_id":%q,"customer_id":"cust-1","amount_cents":1250,"currency":"EUR"}`, id)
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// paymentRoutes is the payments domain's routes, for tests that loop over
// every handler the service runs: a route added to
// [handlers.MessageHandlers.Routes] is covered without editing them.
func paymentRoutes() domain.Routes {
	return handlers.NewMessageHandlers(memory.NewLedger(), nil, nil).Routes()
}

// startupFails builds an App from environ, its HTTP listener on loopback,
// and requires New to fail within limit with one line that contains want
// and never secret (the password of a URL in environ).
func startupFails(t *testing.T, environ []string, want, secret string, limit time.Duration) {
	t.Helper()
	cfg, err := LoadConfig(append(anonymousUnlessKeys(environ, "HTTP_ADDR=127.0.0.1:0"), environ...))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a, err := New(t.Context(), cfg, payments.Domain(), slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	took := time.Since(start)
	if err == nil {
		_ = a.Close()
		t.Fatalf("New succeeded with %v", environ)
	}
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") || (secret != "" && strings.Contains(msg, secret)) {
		t.Errorf("error %q: want one line containing %q, without the password", msg, want)
	}
	if took > limit {
		t.Errorf("New failed after %v, want within %v", took, limit)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}
