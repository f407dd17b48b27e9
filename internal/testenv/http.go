package testenv

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// GetJSON fetches url, decoding a JSON body into v when v is not nil, and
// returns the status.
func GetJSON(t testing.TB, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: decoding: %v", url, err)
		}
	}
	return resp.StatusCode
}

// Scrape reads the Prometheus text exposition at url: its text and its
// metric families by name.
func Scrape(t testing.TB, url string) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return text, families
}

// MetricSum sums the counters and gauges of family, and the sample counts
// of its histograms, over the series whose labels include every pair in
// labels ("outcome", "duplicate", ...).
func MetricSum(family *dto.MetricFamily, labels ...string) float64 {
	var sum float64
	for _, m := range family.GetMetric() {
		if HasLabels(m, labels...) {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// HasLabels reports whether m has every name/value pair in labels.
func HasLabels(m *dto.Metric, labels ...string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
