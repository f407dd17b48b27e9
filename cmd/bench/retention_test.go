package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/bench/retention"
	"github.com/onceflow/onceflow/stores/postgres"
)

func TestRetentionNotePrintsBothLayouts(t *testing.T) {
	results := map[postgres.Layout]*retention.Result{
		postgres.LayoutRows: {Options: retention.Options{Rows: 300_000, Layout: postgres.LayoutRows}, P99Ratio: 1.506, Pairs: 5,
			SweptUnderLoad: 50_000, SweepTime: 10 * time.Second, Drained: 250_000, DrainTime: 5 * time.Second},
		postgres.LayoutPartitioned: {Options: retention.Options{Rows: 300_000, Layout: postgres.LayoutPartitioned}, P99Ratio: 1.04, Pairs: 1},
	}
	lines, err := retentionNote(results)(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"Retention, rows layout, 300000 expired records: claim p99 while it runs 1.506x idle (median of 5 window pairs",
		"removed 5000 records/s under claims, the 250000 left drained alone at 50000/s",
		"records/s under claims, all of them under claims",
		"Retention, partitioned layout, 300000 expired records: claim p99 while it runs 1.040x idle (median of 1 window pairs",
		"judges the partitioned layout",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("note lacks %q:\n%s", want, text)
		}
	}
	if lines, _ := retentionNote(map[postgres.Layout]*retention.Result{
		postgres.LayoutRows: {}, postgres.LayoutPartitioned: {},
	})(context.Background(), nil); len(lines) != 0 {
		t.Errorf("rounds that did not run gave lines %q", lines)
	}
}
