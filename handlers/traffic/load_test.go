package traffic_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/traffic"
	"github.com/onceflow/onceflow/internal/testenv"
)

// Load through the HTTP API of a service on the in-process transport: a
// quarter of the sends are copies, every copy reaches the receiver, and
// the ledger check finds every payment charged once.
func TestLoadThroughHTTPChargesOnce(t *testing.T) {
	a := startApp(t)
	var out bytes.Buffer
	res, err := traffic.Load(context.Background(), cmdEnv([]string{"HTTP_ADDR=" + a.Addr()}), traffic.LoadOptions{
		Duration: 20 * time.Second, Count: 100, Concurrency: 8, DupRatio: 0.25,
		Check: true, CheckTimeout: 20 * time.Second,
	}, &out)
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, out.String())
	}
	if res.Sent != 100 || res.Unique != 75 || res.Duplicates != 25 || res.Errors != 0 {
		t.Errorf("sent %d, unique %d, duplicates %d, errors %d; want 100, 75, 25, 0",
			res.Sent, res.Unique, res.Duplicates, res.Errors)
	}
	if res.Ledger == nil || !res.Ledger.OK() || res.Ledger.Gained.Charges != 75 {
		t.Errorf("ledger check = %+v, want 75 payments charged once", res.Ledger)
	}
	if got := a.summary(t); got != (summary{75, 75, 75}) {
		t.Errorf("summary = %+v, want 75 payments, charges and notifications", got)
	}
	handled := a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "processed") +
		a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "duplicate")
	if handled != 100 {
		t.Errorf("charge_payment handled %v messages, want every one of the 100 sent", handled)
	}
	if res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 || res.Rate <= 0 {
		t.Errorf("p50 %v, p99 %v, max %v, rate %v: want 0 < p50 <= p99 <= max and a rate", res.P50, res.P99, res.Max, res.Rate)
	}
	for _, want := range []string{
		"sent 100 messages in ", "through http://" + a.Addr() + ": 75 unique payments, 25 duplicates, 0 errors",
		"publish latency: p50 ", "+75 payments, +75 charges", "every one of the 75 payments sent charged once",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// Against a service with API_KEYS, load and its check authenticate with
// PUBLISH_API_KEY; without it the check cannot read the ledger.
func TestLoadWithAPIKey(t *testing.T) {
	a := startApp(t, "API_KEYS=s3cret-key-0123456789:load")
	env := []string{"HTTP_ADDR=" + a.Addr()}
	opts := traffic.LoadOptions{Duration: 10 * time.Second, Count: 10, Concurrency: 2, DupRatio: 0.5, Check: true, CheckTimeout: 10 * time.Second}
	var out bytes.Buffer
	if _, err := traffic.Load(context.Background(), cmdEnv(env), opts, &out); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Load without PUBLISH_API_KEY: %v, want 401", err)
	}
	res, err := traffic.Load(context.Background(), cmdEnv(append(env, "PUBLISH_API_KEY=s3cret-key-0123456789")), opts, &out)
	if err != nil || res.Unique != 5 || res.Ledger == nil || !res.Ledger.OK() {
		t.Errorf("Load with PUBLISH_API_KEY: %v, %d unique, ledger %+v; want 5 payments charged once\n%s", err, res.Unique, res.Ledger, out.String())
	}
}

// --rate holds the sends to the rate (one limiter for all workers, whose
// burst is the concurrency), and a terminal gets a progress bar.
func TestLoadKeepsToTheRate(t *testing.T) {
	a := startApp(t)
	var out, progress bytes.Buffer
	res, err := traffic.Load(context.Background(), cmdEnv([]string{"HTTP_ADDR=" + a.Addr()}), traffic.LoadOptions{
		Rate: 40, Duration: time.Second, Concurrency: 8, Progress: &progress, ProgressBar: true,
	}, &out)
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, out.String())
	}
	if res.Sent < 10 || res.Sent > 8+40 {
		t.Errorf("sent %d in 1s at --rate 40 with --concurrency 8, want at most 48 (and not nearly none)", res.Sent)
	}
	if res.Ledger != nil || strings.Contains(out.String(), "ledger") {
		t.Errorf("checked the ledger without Check:\n%s", out.String())
	}
	if !strings.Contains(progress.String(), "sent ") || !strings.Contains(progress.String(), "errors") {
		t.Errorf("progress bar = %q, want the running counts", progress.String())
	}
}

// Load straight to RabbitMQ, as another team's producer would: half the
// sends are copies, and the service charges each payment once. Checked
// against a service that did not receive the messages, the ledger check
// fails.
func TestLoadToBrokerChargesOnce(t *testing.T) {
	env, _, prefix := amqpAppEnv(t)
	a := startApp(t, env...)
	// --transport, not TRANSPORT, chooses the broker.
	loadEnv := append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "TRANSPORT=")
	}), "HTTP_ADDR="+a.Addr())
	opts := traffic.LoadOptions{
		Transport: "amqp", Duration: 20 * time.Second, Count: 200, Concurrency: 8, DupRatio: 0.5,
		Check: true, CheckTimeout: 20 * time.Second,
	}
	var out bytes.Buffer
	res, err := traffic.Load(context.Background(), cmdEnv(loadEnv), opts, &out)
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, out.String())
	}
	if res.Sent != 200 || res.Unique != 100 || res.Duplicates != 100 || res.Errors != 0 {
		t.Errorf("sent %d, unique %d, duplicates %d, errors %d; want 200, 100, 100, 0",
			res.Sent, res.Unique, res.Duplicates, res.Errors)
	}
	if res.Ledger == nil || !res.Ledger.OK() {
		t.Errorf("ledger check = %+v, want every payment charged once", res.Ledger)
	}
	if got := a.summary(t); got.Payments != 100 || got.Charges != 100 {
		t.Errorf("summary = %+v, want 100 payments and charges", got)
	}
	if want := "to amqp topic " + prefix + handlers.TopicPaymentRequested + ": 100 unique payments"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}

	elsewhere := startApp(t)
	out.Reset()
	opts.Count, opts.DupRatio, opts.CheckTimeout = 20, 0, 300*time.Millisecond
	res, err = traffic.Load(context.Background(), cmdEnv(append(loadEnv, "HTTP_ADDR="+elsewhere.Addr())), opts, &out)
	if err == nil || !strings.Contains(err.Error(), "ledger mismatch: 20 payments sent, the ledger gained 0 charged payments and 0 charges") ||
		!strings.Contains(err.Error(), "20 never charged") {
		t.Errorf("Load checked against a service that received nothing: %v, want a ledger mismatch\n%s", err, out.String())
	}
	if res.Sent != 20 || res.Ledger == nil || res.Ledger.OK() {
		t.Errorf("sent %d, ledger check %+v; want 20 sent and a failed check", res.Sent, res.Ledger)
	}
}

func TestLoadRejectsBadOptions(t *testing.T) {
	ok := traffic.LoadOptions{Duration: time.Second, Concurrency: 1}
	with := func(f func(*traffic.LoadOptions)) traffic.LoadOptions { o := ok; f(&o); return o }
	for _, tc := range []struct {
		opts    traffic.LoadOptions
		environ []string
		want    string
	}{
		{with(func(o *traffic.LoadOptions) { o.Rate = -1 }), nil, "--rate=-1 is not allowed: use 0 (as fast as possible) or a positive number"},
		{with(func(o *traffic.LoadOptions) { o.Duration = 0 }), nil, "--duration=0s is not allowed: use a positive duration"},
		{with(func(o *traffic.LoadOptions) { o.Count = -5 }), nil, "--count=-5 is not allowed"},
		{with(func(o *traffic.LoadOptions) { o.Concurrency = 0 }), nil, "--concurrency=0 is not allowed: use 1 or more"},
		{with(func(o *traffic.LoadOptions) { o.DupRatio = 1 }), nil, "--dup-ratio=1 is not allowed: use a fraction from 0 up to, not including, 1"},
		{with(func(o *traffic.LoadOptions) { o.DupRatio = -0.1 }), nil, "--dup-ratio=-0.1 is not allowed"},
		{with(func(o *traffic.LoadOptions) { o.Transport = "mqtt" }), nil, `--transport="mqtt" is not allowed: use one of ` + strings.Join(cmdEnv(nil).Transports, ", ")},
		{with(func(o *traffic.LoadOptions) { o.CheckTimeout = -time.Second }), nil, "--check-timeout=-1s is not allowed"},
		{with(func(o *traffic.LoadOptions) { o.ServiceURL = "localhost:8080" }), nil, `--service-url="localhost:8080" is not allowed: use an http:// or https:// URL`},
		{with(func(o *traffic.LoadOptions) { o.Transport = "kafka" }), nil, "KAFKA_BROKERS is required"},
		{with(func(o *traffic.LoadOptions) { o.Check = true }), []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)},
			"reading the ledger before sending (--check; start the service, point --service-url at it, or pass --check=false)"},
	} {
		_, err := traffic.Load(context.Background(), cmdEnv(tc.environ), tc.opts, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

// Against a service with API_KEYS, load straight to the broker publishes
// payments of the client PUBLISH_API_KEY names, whose summary the check
// reads: the payments are that client's, not the anonymous client's.
func TestLoadToBrokerWithAPIKey(t *testing.T) {
	env, _, _ := amqpAppEnv(t)
	env = append(env, "API_KEYS=s3cret-key-0123456789:load")
	a := startApp(t, env...)
	loadEnv := append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "TRANSPORT=")
	}), "HTTP_ADDR="+a.Addr(), "PUBLISH_API_KEY=s3cret-key-0123456789")
	opts := traffic.LoadOptions{
		Transport: "amqp", Duration: 20 * time.Second, Count: 20, Concurrency: 4, DupRatio: 0.5,
		Check: true, CheckTimeout: 10 * time.Second,
	}
	var out bytes.Buffer
	res, err := traffic.Load(context.Background(), cmdEnv(loadEnv), opts, &out)
	if err != nil || res.Unique != 10 || res.Ledger == nil || !res.Ledger.OK() {
		t.Errorf("Load: %v, %d unique, ledger %+v; want 10 payments of client load charged once\n%s", err, res.Unique, res.Ledger, out.String())
	}
}
