package app

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/onceflow/onceflow/internal/testenv"
)

const (
	dashboardFile        = "../deploy/grafana/dashboards/onceflow.json"
	prometheusConfigFile = "../deploy/prometheus/prometheus.yml"
)

// The metric names and selectors of a PromQL expression are read with
// regular expressions rather than the Prometheus parser
// (prometheus/promql/parser), whose module is the whole Prometheus server
// and would pin its versions of client_golang, prometheus/common and
// OpenTelemetry on this module. That is enough because the dashboard is
// held to two rules the test enforces: every expression names at least one
// metric, and every metric it names is the service's own (onceflow_*).
var (
	promqlMetric   = regexp.MustCompile(`\bonceflow_[a-zA-Z0-9_:]*`)
	promqlSelector = regexp.MustCompile(`\b(onceflow_[a-zA-Z0-9_:]*)\{([^}]*)\}`)
	promqlMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
)

// dashboard is what the test reads of the Grafana dashboard JSON.
type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Every panel of the dashboard queries metrics that a real scrape of the
// service (the known run of TestMetricsAfterKnownRun) shows, with label
// names that exist and, for equality matchers, values that exist: a
// renamed metric or label breaks this test, not the dashboard on the day
// it is needed.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID != "onceflow" || len(d.Panels) == 0 {
		t.Fatalf("%s: uid %q with %d panels, want uid onceflow (the URL docs/operations.md gives) and panels", dashboardFile, d.UID, len(d.Panels))
	}
	s := knownRunScrape(t)
	for _, p := range d.Panels {
		if p.Datasource.UID != "prometheus" {
			t.Errorf("panel %q: datasource uid %q, want the provisioned prometheus", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := promqlMetric.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q names no onceflow_ metric", p.Title, q.Expr)
			}
			for _, name := range names {
				if family(s, name) == nil {
					t.Errorf("panel %q: %s is not in a scrape of the service", p.Title, name)
				}
			}
			for _, sel := range promqlSelector.FindAllStringSubmatch(q.Expr, -1) {
				checkMatchers(t, p.Title, family(s, sel[1]), sel[2])
			}
		}
	}
}

// family returns the scraped family of a metric name as PromQL writes it:
// a histogram's series are its name with _bucket, _sum or _count.
func family(s scrape, name string) *dto.MetricFamily {
	if f := s.families[name]; f != nil {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f := s.families[strings.TrimSuffix(name, suffix)]; f != nil && strings.HasSuffix(name, suffix) &&
			f.GetType() == dto.MetricType_HISTOGRAM {
			return f
		}
	}
	return nil
}

// checkMatchers checks that every label a selector matches on exists in f,
// and that an equality matcher's value is one of its series'.
func checkMatchers(t *testing.T, panel string, f *dto.MetricFamily, matchers string) {
	t.Helper()
	if f == nil {
		return // reported already
	}
	for _, m := range promqlMatcher.FindAllStringSubmatch(matchers, -1) {
		label, op, value := m[1], m[2], m[3]
		found, valued := false, false
		for _, series := range f.GetMetric() {
			for _, lp := range series.GetLabel() {
				if lp.GetName() == label {
					found = true
					valued = valued || lp.GetValue() == value
				}
			}
		}
		switch {
		case !found:
			t.Errorf("panel %q: %s has no label %s", panel, f.GetName(), label)
		case op == "=" && !valued:
			t.Errorf("panel %q: no series of %s has %s=%q", panel, f.GetName(), label, value)
		}
	}
}

// The compose stack's Prometheus configuration passes promtool check
// config (Debian's prometheus package; .ci/run installs it).
func TestPrometheusConfigValid(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testenv.Required() {
			t.Fatalf("promtool not found (REQUIRE_SERVICES=1): install Debian's prometheus package")
		}
		t.Skip("promtool not found: install Debian's prometheus package, or set REQUIRE_SERVICES=1 to fail instead")
	}
	out, err := exec.Command(promtool, "check", "config", prometheusConfigFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config %s: %v\n%s", prometheusConfigFile, err, out)
	}
}
