package middleware

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPrometheusObserver(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs, err := NewPrometheusObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newReceiver(t, Config{Observer: obs})
	fn := func(context.Context) ([]byte, error) { return nil, nil }
	for range 3 {
		if _, err := r.Execute(context.Background(), "charge", testKey, fingerprint, fn); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(obs.outcomes.WithLabelValues("charge", "processed")); got != 1 {
		t.Errorf("processed = %v, want 1", got)
	}
	if got := testutil.ToFloat64(obs.outcomes.WithLabelValues("charge", "duplicate")); got != 2 {
		t.Errorf("duplicate = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(obs.outcomes); n != len(Outcomes()) {
		t.Errorf("%d outcome series after the first call, want all %d pre-initialised", n, len(Outcomes()))
	}
	if n := testutil.CollectAndCount(obs.latency, "onceflow_store_duration_seconds"); n != 2 {
		t.Errorf("%d latency series, want claim and complete", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	if _, err := NewPrometheusObserver(reg); err == nil {
		t.Error("registering twice succeeded")
	}
}
