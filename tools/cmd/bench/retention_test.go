package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/retention"
)

func TestRetentionNotePrintsBothLayouts(t *testing.T) {
	results := map[postgres.Layout]*retention.Result{
		postgres.LayoutRows: {Options: retention.Options{Rows: 300_000, Windows: 5, Layout: postgres.LayoutRows}, P99Ratio: 1.506, Pairs: 2,
			SweptUnderLoad: 50_000, SweepTime: 10 * time.Second, Drained: 250_000, DrainTime: 5 * time.Second},
		postgres.LayoutPartitioned: {Options: retention.Options{Rows: 300_000, Windows: 5, Layout: postgres.LayoutPartitioned}, P99Ratio: 1.04, Pairs: 5},
	}
	lines, err := retentionNote(results)(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"Retention, rows layout, 300000 expired records: claim p99 while it runs 1.506x idle " +
			"(median over 2 of 5 sweeping windows, the others having nothing left to remove, each against the idle windows either side;",
		"removed 5000 records/s under claims, the 250000 left drained alone at 50000/s",
		"records/s under claims, all of them under claims",
		"Retention, partitioned layout, 300000 expired records: claim p99 while it runs 1.040x idle " +
			"(median over 5 of 5 sweeping windows, each against",
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

func TestEveryPairJudgesOnlyAFigureOverEveryWindow(t *testing.T) {
	var last retention.Result
	round := func(pairs int) func(context.Context) (float64, error) {
		return everyPair(func(context.Context) (float64, error) {
			last = retention.Result{Options: retention.Options{Windows: 5}, P99Ratio: 1.1, Pairs: pairs}
			return last.P99Ratio, nil
		}, &last)
	}
	if v, err := round(5)(context.Background()); err != nil || v != 1.1 {
		t.Errorf("round of 5 pairs in 5 windows = %v, %v; want 1.1", v, err)
	}
	_, err := round(1)(context.Background())
	if err == nil || !strings.Contains(err.Error(), "only 1 of 5 sweeping windows removed records") {
		t.Errorf("round of 1 pair in 5 windows: error %v, want one that says only 1 of 5 windows removed records", err)
	}
	failed := errors.New("round failed")
	if _, err := everyPair(func(context.Context) (float64, error) { return 0, failed }, &last)(context.Background()); !errors.Is(err, failed) {
		t.Errorf("failed round: error %v, want its own", err)
	}
}

func TestRetentionNoteBoundsAMissByTheChurnWindows(t *testing.T) {
	part := &retention.Result{Options: retention.Options{Rows: 300_000, Windows: 5, Layout: postgres.LayoutPartitioned},
		P99Ratio: 1.25, Pairs: 5, ChurnP99Ratio: 1.22, ChurnRatios: []float64{1.3, 1.22, 1.1, 1.25, 1.2}}
	results := map[postgres.Layout]*retention.Result{postgres.LayoutRows: {}, postgres.LayoutPartitioned: part}
	missed := &bench.Report{Verdicts: []bench.Verdict{{
		Target: bench.Target{Name: retentionTarget, Op: bench.AtMost, Goal: 1.2}, Value: 1.25, Pass: false,
	}}}
	note := func(rep *bench.Report) string {
		t.Helper()
		lines, err := retentionNote(results)(context.Background(), rep)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	text := note(missed)
	for _, want := range []string{
		"remove no record slow claim p99 1.220x (median over 5 churn windows of the same round",
		"against 1.250x for the sweeping windows",
		"Bound: retention-claim-p99: the partition changes alone measure 1.220x against the goal 1.2 (measured 1.250): out of reach at this pace",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("note lacks %q:\n%s", want, text)
		}
	}

	part.ChurnP99Ratio = 1.05
	if text := note(missed); !strings.Contains(text, "measure 1.050x against the goal 1.2 (measured 1.250): not bound by the partition changes") {
		t.Errorf("churn under the goal: note does not say the partition changes do not bound it:\n%s", text)
	}
	missed.Verdicts[0].Pass = true
	if text := note(missed); strings.Contains(text, "Bound:") || !strings.Contains(text, "slow claim p99 1.050x") {
		t.Errorf("target met: want the churn figure and no bound:\n%s", text)
	}
}
