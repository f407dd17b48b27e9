package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

func TestObserver(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs, err := NewObserver(reg, "memory")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := receivertest.NewReceiver(t, receiver.Config{Observer: obs})
	fn := func(context.Context) ([]byte, error) { return nil, nil }
	for range 3 {
		if _, err := r.Execute(context.Background(), "charge", "key", []byte("fingerprint"), fn); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(obs.outcomes.WithLabelValues("charge", "processed")); got != 1 {
		t.Errorf("processed = %v, want 1", got)
	}
	if got := testutil.ToFloat64(obs.outcomes.WithLabelValues("charge", "duplicate")); got != 2 {
		t.Errorf("duplicate = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(obs.outcomes); n != len(receiver.Outcomes()) {
		t.Errorf("%d outcome series after the first call, want all %d pre-initialised", n, len(receiver.Outcomes()))
	}
	if n := testutil.CollectAndCount(obs.latency, "onceflow_store_duration_seconds"); n != 2 {
		t.Errorf("%d latency series, want claim and complete", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	if _, err := NewObserver(reg, "memory"); err == nil {
		t.Error("registering twice succeeded")
	}
}

// Init exports every series of the scopes it is given at zero, the
// latencies carry the store's name, and extensions and replays are counted
// by scope.
func TestObserverSeries(t *testing.T) {
	obs, err := NewObserver(prometheus.NewPedanticRegistry(), "redis")
	if err != nil {
		t.Fatal(err)
	}
	obs.Init("charge", "notify")
	if n := testutil.CollectAndCount(obs.outcomes); n != 2*len(receiver.Outcomes()) {
		t.Errorf("%d outcome series after Init, want %d", n, 2*len(receiver.Outcomes()))
	}
	if n := testutil.CollectAndCount(obs.extensions); n != 2*len(receiver.Extensions()) {
		t.Errorf("%d extension series after Init, want %d", n, 2*len(receiver.Extensions()))
	}
	if n := testutil.CollectAndCount(obs.replayed); n != 2 {
		t.Errorf("%d replay series after Init, want 2", n)
	}
	obs.LeaseExtension("charge", receiver.ExtensionExtended)
	obs.LeaseExtension("charge", receiver.ExtensionExtended)
	obs.LeaseExtension("notify", receiver.ExtensionLost)
	obs.Replayed("charge", 2)
	obs.Replayed("charge", 0)
	for _, c := range []struct {
		got  prometheus.Collector
		want float64
	}{
		{obs.extensions.WithLabelValues("charge", "extended"), 2},
		{obs.extensions.WithLabelValues("charge", "lost"), 0},
		{obs.extensions.WithLabelValues("notify", "lost"), 1},
		{obs.replayed.WithLabelValues("charge"), 2},
		{obs.replayed.WithLabelValues("notify"), 0},
	} {
		if got := testutil.ToFloat64(c.got); got != c.want {
			t.Errorf("%v = %v, want %v", c.got, got, c.want)
		}
	}
	want := `
# HELP onceflow_store_duration_seconds Latency of idempotency store calls by operation (claim, complete, release, extend) and store.
# TYPE onceflow_store_duration_seconds histogram
`
	var b strings.Builder
	b.WriteString(want)
	for _, op := range storeOps {
		for _, le := range []string{"0.0001", "0.00025", "0.000625", "0.0015625", "0.00390625", "0.009765625",
			"0.0244140625", "0.06103515625", "0.152587890625", "0.3814697265625", "0.95367431640625", "2.384185791015625", "+Inf"} {
			b.WriteString(`onceflow_store_duration_seconds_bucket{op="` + op + `",store="redis",le="` + le + `"} 0` + "\n")
		}
		b.WriteString(`onceflow_store_duration_seconds_sum{op="` + op + `",store="redis"} 0` + "\n")
		b.WriteString(`onceflow_store_duration_seconds_count{op="` + op + `",store="redis"} 0` + "\n")
	}
	if err := testutil.CollectAndCompare(obs.latency, strings.NewReader(b.String())); err != nil {
		t.Errorf("latencies after Init: %v", err)
	}
	if _, err := NewObserver(prometheus.NewRegistry(), ""); err == nil {
		t.Error("an empty store name was accepted")
	}
}
