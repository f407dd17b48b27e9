// Package apptest runs the service in a test, as net/http/httptest runs a
// handler: a real [app.App] with the test's domain, on a loopback port,
// stopped when the test ends. A domain's end-to-end tests start the
// service with it and talk to it over HTTP and the broker, as its clients
// do.
package apptest

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport"
)

// Service is a running service.
type Service struct {
	*app.App
	// URL is the base URL of its HTTP server, http://127.0.0.1:<port>.
	URL string
	// InternalURL is the base URL of its /metrics and probes: the internal
	// server's when environ sets INTERNAL_ADDR, else URL.
	InternalURL string
	cfg         app.Config
	stop        func() error
	producer    func() (*app.Producer, error)
}

// Start runs the domain d in a service configured by environ (KEY=value
// settings; HTTP_ADDR defaults to a free loopback port, LOG_LEVEL to warn,
// RETRY_INTERVAL to 10ms, DATABASE_MAX_CONNS to 8, so that the tests of
// several packages run side by side within PostgreSQL's connections, and
// unless environ sets API_KEYS, ALLOW_ANONYMOUS to true) until the test
// ends, and returns once /readyz answers 200. The domain reads its own
// settings from environ too ([domain.Deps.Getenv]). Its log goes to t.Log.
func Start(t testing.TB, d domain.Domain, environ ...string) *Service {
	t.Helper()
	environ = append(defaults(environ), environ...)
	cfg, err := app.LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	logger := app.NewLogger(testWriter{t}, cfg.LogLevel, "text")
	a, err := app.New(context.Background(), cfg, d.WithEnviron(environ), logger)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{App: a, URL: "http://" + a.Addr(), cfg: cfg, stop: testenv.Run(t, a)}
	var opened *app.Producer
	s.producer = sync.OnceValues(func() (*app.Producer, error) {
		var err error
		opened, err = app.OpenProducer(context.Background(), cfg, nil)
		return opened, err
	})
	t.Cleanup(func() {
		if opened != nil {
			_ = opened.Close()
		}
	})
	s.InternalURL = s.URL
	if addr := a.InternalAddr(); addr != "" {
		s.InternalURL = "http://" + addr
	}
	testenv.WaitFor(t, 20*time.Second, "the service ready", func() bool {
		return testenv.GetJSON(t, s.InternalURL+"/readyz", nil) == http.StatusOK
	})
	return s
}

// defaults are the settings Start puts before environ.
func defaults(environ []string) []string {
	defaults := []string{"HTTP_ADDR=127.0.0.1:0", "LOG_LEVEL=warn", "RETRY_INTERVAL=10ms", "DATABASE_MAX_CONNS=8"}
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "API_KEYS=") }) {
		defaults = append(defaults, "ALLOW_ANONYMOUS=true")
	}
	return defaults
}

// StartFails requires the service of the domain d to refuse to start on
// environ (after Start's defaults) within limit, with an error of one line
// that contains want and never secret (the password of a URL in environ;
// "" for none): a broker or store that cannot be reached, a setting it
// refuses.
func StartFails(t testing.TB, d domain.Domain, environ []string, want, secret string, limit time.Duration) {
	t.Helper()
	environ = append(defaults(environ), environ...)
	cfg, err := app.LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartupFails(t, func() error {
		a, err := app.New(context.Background(), cfg, d.WithEnviron(environ), app.NewLogger(testWriter{t}, cfg.LogLevel, "text"))
		if err == nil {
			_ = a.Close()
		}
		return err
	}, want, secret, limit)
}

// Stop stops the service gracefully, as SIGTERM would, and returns what Run
// and Close returned. Calling it again returns the same.
func (s *Service) Stop() error { return s.stop() }

// Get fetches path from URL, decoding a JSON body into v when v is not nil, and
// returns the status.
func (s *Service) Get(t testing.TB, path string, v any) int {
	t.Helper()
	return testenv.GetJSON(t, s.URL+path, v)
}

// Post sends body to path on URL as JSON, with a fresh Idempotency-Key
// unless header (name, value pairs) sets one, so that each call is a new
// request to the API, and returns the status. It fails t when no answer
// comes.
func (s *Service) Post(t testing.TB, path, body string, header ...string) int {
	t.Helper()
	return testenv.PostNew(t, s.URL+path, body, header...)
}

// Producer is a producer on the service's broker, publishing as another
// team's service would ([app.OpenProducer] on the service's settings:
// topics after TOPIC_PREFIX, signed when MESSAGE_SIGNING_SECRETS is set),
// opened on first use and closed when the test ends. TRANSPORT=gochannel
// keeps its messages in the service's process, out of a producer's reach:
// there it fails t.
func (s *Service) Producer(t testing.TB) *app.Producer {
	t.Helper()
	if s.cfg.Transport == transport.GoChannel {
		t.Fatal("apptest: TRANSPORT=gochannel has no broker that a producer reaches: post to the API instead")
	}
	p, err := s.producer()
	if err != nil {
		t.Fatalf("opening a producer on the service's broker: %v", err)
	}
	return p
}

// Metric returns the sum of the counter or gauge name (or the sample count
// of the histogram name) over the series of /metrics whose labels include
// every pair in labels: Metric(t, "onceflow_receiver_outcomes_total",
// "scope", "charge", "outcome", "duplicate").
func (s *Service) Metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	_, families := testenv.Scrape(t, s.InternalURL+"/metrics")
	return testenv.MetricSum(families[name], labels...)
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
