package app

import (
	"bytes"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/migrations"
)

// scrape is one read of /metrics: its text and its families by name.
type scrape struct {
	text     []byte
	families map[string]*dto.MetricFamily
}

func (r *running) scrape(t testing.TB) scrape {
	t.Helper()
	text, families := testenv.Scrape(t, r.ops+"/metrics")
	return scrape{text: text, families: families}
}

// value sums the counter, gauge or histogram sample count of name over the
// series whose labels include every pair in labels.
func (s scrape) value(name string, labels ...string) float64 {
	return testenv.MetricSum(s.families[name], labels...)
}

// sampleSum sums the sample sums of histogram name over the series whose
// labels include every pair in labels.
func (s scrape) sampleSum(name string, labels ...string) float64 {
	var sum float64
	for _, m := range s.families[name].GetMetric() {
		if testenv.HasLabels(m, labels...) {
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// The known run: on gochannel with PostgreSQL records, 4 requests, 3
// retries of them, 1 key reused for another request and 1 request without
// a key through the API, 2 of the 4 requested events delivered again, 5
// expired records waiting for the sweeper. Every
// number /metrics shows about it is checked, and the scrape passes the
// linter of promtool check metrics. The dashboard's test reads the same
// scrape (knownRunScrape).
func TestMetricsAfterKnownRun(t *testing.T) {
	s := knownRunScrape(t)
	routes := testdomain.Routes()
	deliveries := 6.0 // per route: 4 messages, 2 copies
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"onceflow_http_idempotency_responses_total", []string{"code", "202", "method", "post"}, 7},
		{"onceflow_http_idempotency_responses_total", []string{"code", "422"}, 1},
		{"onceflow_http_idempotency_responses_total", []string{"code", "400"}, 1},
		{"onceflow_receiver_outcomes_total", []string{"scope", idempotencykey.Scope, "outcome", "processed"}, 4},
		{"onceflow_receiver_outcomes_total", []string{"scope", idempotencykey.Scope, "outcome", "duplicate"}, 3},
		{"onceflow_receiver_outcomes_total", []string{"scope", idempotencykey.Scope, "outcome", "fingerprint_mismatch"}, 1},
		{"onceflow_receiver_outcomes_total", []string{"scope", idempotencykey.Scope}, 8},
		// 8 claims by the API and 6 by each route; 4 completes by each.
		{"onceflow_store_duration_seconds", []string{"store", "postgres", "op", "claim"}, 8 + deliveries*float64(len(routes))},
		{"onceflow_store_duration_seconds", []string{"store", "postgres", "op", "complete"}, 4 + 4*float64(len(routes))},
		// Each copy of a requested event replays its charged event,
		// whose copies the other routes answer as duplicates.
		{"onceflow_replayed_messages_total", []string{"scope", testdomain.ChargeRoute}, 2},
		{"onceflow_store_duration_seconds", []string{"op", "release"}, 0},
		{"onceflow_sweeper_deleted_records_total", nil, 5},
		{"onceflow_poisoned_messages_total", nil, 0},
		{"onceflow_lease_extensions_total", nil, 0},
		{"onceflow_replayed_messages_total", nil, 2},
	} {
		if got := s.value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, r := range routes {
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"onceflow_receiver_outcomes_total", []string{"scope", r.Name, "outcome", "processed"}, 4},
			{"onceflow_receiver_outcomes_total", []string{"scope", r.Name, "outcome", "duplicate"}, 2},
			{"onceflow_receiver_outcomes_total", []string{"scope", r.Name}, deliveries},
			{"onceflow_router_handler_execution_time_seconds", []string{"handler_name", r.Name, "success", "true"}, deliveries},
			{"onceflow_router_handler_execution_time_seconds", []string{"handler_name", r.Name, "success", "false"}, 0},
			{"onceflow_router_subscriber_messages_received_total", []string{"handler_name", r.Name, "acked", "acked"}, deliveries},
		} {
			if got := s.value(c.name, c.labels...); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}
	}
	// The batches carried every call that reached PostgreSQL: every
	// complete, and every claim the local cache did not answer.
	for _, c := range []struct {
		op   string
		want float64
	}{
		{"claim", s.value("onceflow_store_duration_seconds", "op", "claim") - s.value("onceflow_dedup_cache_lookups_total", "result", "hit")},
		{"complete", s.value("onceflow_store_duration_seconds", "op", "complete")},
	} {
		batches, calls := s.value("onceflow_store_batch_calls", "op", c.op), s.sampleSum("onceflow_store_batch_calls", "op", c.op)
		if calls != c.want || batches < 1 || batches > calls {
			t.Errorf("onceflow_store_batch_calls{op=%q}: %v calls in %v batches, want %v calls", c.op, calls, batches, c.want)
		}
	}
	// Series of every route exist before anything fails.
	if n := len(s.families["onceflow_lease_extensions_total"].GetMetric()); n != 3*(len(routes)+1) {
		t.Errorf("%d lease extension series, want 3 for each route and http", n)
	}
	problems, err := promlint.New(bytes.NewReader(s.text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics: %s: %s", p.Metric, p.Text)
	}
}

// knownRunScrape makes the known run of TestMetricsAfterKnownRun once per
// test binary and returns its scrape.
func knownRunScrape(t *testing.T) scrape {
	t.Helper()
	knownRun.once.Do(func() {
		// Left set if the known run ends the first test early (skipped,
		// or failed: that test reports it).
		knownRun.skip = "the known run did not finish: see the first test that made it"
		knownRun.s, knownRun.err = makeKnownRun(t)
		knownRun.skip = ""
	})
	if knownRun.skip != "" {
		t.Skip(knownRun.skip)
	}
	if knownRun.err != "" {
		t.Fatal(knownRun.err)
	}
	return knownRun.s
}

func makeKnownRun(t *testing.T) (scrape, string) {
	dbURL := testenv.PostgresSchema(t)
	pool, err := openPostgres(t.Context(), dbURL, 2)
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", dbURL, err)
	}
	defer pool.Close()
	if err := migrate(t.Context(), pool, string(migrations.Rows), testdomain.Domain()); err != nil {
		return scrape{}, err.Error()
	}
	if _, err := pool.Exec(t.Context(), `
		INSERT INTO idempotency_records (key, state, token, fingerprint, created_at, completed_at, expires_at)
		SELECT 'expired-' || i, 'completed', 't-' || i, '\x00', now() - interval '2 days', now() - interval '2 days', now() - interval '1 day'
		FROM generate_series(1, 5) AS i`); err != nil {
		return scrape{}, "seeding expired records: " + err.Error()
	}
	a := startApp(t, "STORE=postgres", "DATABASE_URL="+dbURL)
	requested, err := captureRequested(t, a)
	if err != nil {
		return scrape{}, err.Error()
	}
	keys := make([]string, 4)
	for i := range keys {
		keys[i] = uuid.NewString()
		if code := a.Post(t, flowtest.CreatePath, flowtest.Body("req-"+keys[i][:8]), "Idempotency-Key", keys[i]); code != http.StatusAccepted {
			return scrape{}, "request: status " + http.StatusText(code)
		}
	}
	for i := range 3 {
		if code := a.Post(t, flowtest.CreatePath, flowtest.Body("req-"+keys[i][:8]), "Idempotency-Key", keys[i]); code != http.StatusAccepted {
			return scrape{}, "retry: status " + http.StatusText(code)
		}
	}
	if code := a.Post(t, flowtest.CreatePath, flowtest.Body("req-other"), "Idempotency-Key", keys[0]); code != http.StatusUnprocessableEntity {
		return scrape{}, "reused key: status " + http.StatusText(code)
	}
	if code := a.Post(t, flowtest.CreatePath, flowtest.Body("req-nokey"), "Idempotency-Key", ""); code != http.StatusBadRequest {
		return scrape{}, "no key: status " + http.StatusText(code)
	}
	// Two of the requested events again, as a broker redelivers them.
	for range 2 {
		if err := a.transport.Publisher().Publish(testdomain.TopicRequested, <-requested); err != nil {
			return scrape{}, "publishing a copy: " + err.Error()
		}
	}
	routes := testdomain.Routes()
	waitFor(t, "every route's deliveries acked and the sweeper's first pass", func() bool {
		s := a.scrape(t)
		for _, r := range routes {
			if s.value("onceflow_router_subscriber_messages_received_total", "handler_name", r.Name, "acked", "acked") < 6 {
				return false
			}
		}
		return s.value("onceflow_sweeper_pass_duration_seconds") >= 1
	})
	time.Sleep(50 * time.Millisecond) // a late extra delivery would show
	return a.scrape(t), ""
}

// captureRequested subscribes to the requested events of a (gochannel)
// and hands on a copy of each, same UUID, metadata and payload.
func captureRequested(t *testing.T, a *running) (<-chan *message.Message, error) {
	sub, err := a.transport.Subscriber("known_run_capture", 1)
	if err != nil {
		return nil, err
	}
	msgs, err := sub.Subscribe(t.Context(), testdomain.TopicRequested)
	if err != nil {
		return nil, err
	}
	copies := make(chan *message.Message, 16)
	go func() {
		for m := range msgs {
			copies <- m.Copy()
			m.Ack()
		}
	}()
	return copies, nil
}

var knownRun struct {
	once sync.Once
	s    scrape
	err  string
	skip string // why the known run could not be made
}
