package app

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// running is an App started by startApp: a [flowtest.Service].
type running struct {
	*App
	base string
	// ops is the base URL of /metrics and the probes: base, or the
	// internal server's when INTERNAL_ADDR is set.
	ops  string
	stop func() error // cancels Run and returns its error
}

var _ flowtest.Service = (*running)(nil)

// startApp runs a real App with the test domain on a loopback port until
// the test ends.
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
	return startDomain(t, testdomain.Domain(), sm, logger, environ...)
}

// testLogger logs warnings and errors to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startDomain is startAppLogging running the domain d, which reads its
// settings from environ too, as apptest.Start hands it them.
func startDomain(t testing.TB, d domain.Domain, sm seams, logger *slog.Logger, environ ...string) *running {
	t.Helper()
	// A pool of 8 connections, as the fault suite's instances have: make
	// test runs three packages side by side, all within PostgreSQL's 100.
	environ = append(anonymousUnlessKeys(environ, "HTTP_ADDR=127.0.0.1:0", "LOG_LEVEL=warn", "RETRY_INTERVAL=10ms",
		"DATABASE_MAX_CONNS=8"), environ...)
	cfg, err := LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(context.Background(), cfg, d.WithEnviron(environ), logger, sm)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, a)
}

// run runs a until the test ends and returns it once ready.
func run(t testing.TB, a *App) *running {
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

// Post sends body to path with the given headers and returns the status.
// Each call sends a fresh Idempotency-Key unless header sets one, so each
// call is a new request to the API.
func (r *running) Post(t testing.TB, path, body string, header ...string) int {
	t.Helper()
	return testenv.PostNew(t, r.base+path, body, header...)
}

// Get fetches path, decoding a JSON body into v when v is not nil.
func (r *running) Get(t testing.TB, path string, v any) int {
	t.Helper()
	return testenv.GetJSON(t, r.base+path, v)
}

// Metric returns the sum of the counter or gauge name over the series
// whose labels include every pair in labels.
func (r *running) Metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	return r.scrape(t).value(name, labels...)
}

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 20*time.Second, what, cond)
}

// waitForWithin polls cond until it holds, failing the test after limit.
func waitForWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, limit, what, cond)
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startupFails builds an App from environ, its HTTP listener on loopback,
// and requires New to fail within limit with one line that contains want
// and never secret (the password of a URL in environ).
func startupFails(t *testing.T, environ []string, want, secret string, limit time.Duration) {
	t.Helper()
	environ = append(anonymousUnlessKeys(environ, "HTTP_ADDR=127.0.0.1:0"), environ...)
	cfg, err := LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartupFails(t, func() error {
		a, err := New(t.Context(), cfg, testdomain.Domain().WithEnviron(environ), slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		if err == nil {
			_ = a.Close()
		}
		return err
	}, want, secret, limit)
}
