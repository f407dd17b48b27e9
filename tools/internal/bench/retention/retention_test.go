package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/tools/internal/bench/retention"
)

// check fails t unless res shows a round that claimed in both kinds of
// window and whose sweeper removed every filled record.
func check(t *testing.T, res retention.Result, rows int) {
	t.Helper()
	t.Logf("\n%s", res)
	if res.Left != 0 {
		t.Errorf("%d filled records left after the drain, want 0", res.Left)
	}
	if got := res.SweptUnderLoad + res.Drained; got != int64(rows) {
		t.Errorf("sweeper removed %d records (%d under load, %d drained), want the %d filled",
			got, res.SweptUnderLoad, res.Drained, rows)
	}
	if res.SweptUnderLoad == 0 {
		t.Error("sweeper removed nothing while claims ran")
	}
	if res.IdleClaims == 0 || res.SweepClaims == 0 || res.P99Ratio <= 0 {
		t.Errorf("claims idle %d, sweeping %d, p99 ratio %v: want claims in both windows and a ratio",
			res.IdleClaims, res.SweepClaims, res.P99Ratio)
	}
}

func TestRunDrainsEveryFilledRecord(t *testing.T) {
	testenv.Integration(t)
	testenv.PostgresSchema(t) // skips or fails, per REQUIRE_SERVICES, when PostgreSQL is down
	for _, layout := range []postgres.Layout{postgres.LayoutRows, postgres.LayoutPartitioned} {
		t.Run(string(layout), func(t *testing.T) {
			t.Parallel()
			const rows = 20_000
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// A batch small enough that the rows layout's sweeping windows
			// cannot finish the backlog, so the drain has work too. A
			// partitioned sweeping window must hold a whole pass (create
			// the next partition; DETACH ... CONCURRENTLY, which waits out
			// every claim in flight; DROP), which on a loaded machine
			// takes longer than the rows layout's short windows: the
			// window's end cancels a pass still running.
			window := 300 * time.Millisecond
			if layout == postgres.LayoutPartitioned {
				window = time.Second
			}
			res, err := retention.Run(ctx, retention.Options{
				URL: testenv.PostgresURL(), Rows: rows, Callers: 2,
				Window: window, Windows: 2, Batch: 50, Pause: 5 * time.Millisecond, Layout: layout, Churn: true,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			check(t, res, rows)
			// Both layouts have records to remove in every sweeping
			// window: the partitioned one a partition each, the rows one
			// a backlog its small batches cannot finish.
			if res.Options.Layout != layout || res.Pairs != 2 || len(res.Ratios) != res.Pairs {
				t.Errorf("round of layout %q with %d window pairs (ratios %v); want %q with 2", res.Options.Layout, res.Pairs, res.Ratios, layout)
			}
			if layout == postgres.LayoutRows && res.Drained == 0 {
				t.Error("drain removed nothing: the windows should have left a backlog")
			}
			// Churn windows change the partitions of the partitioned
			// layout only; the rows layout has none to change.
			wantChurn, wantIdle := 0, 3
			if layout == postgres.LayoutPartitioned {
				wantChurn, wantIdle = 2, 5
			}
			if len(res.ChurnRatios) != wantChurn || (wantChurn > 0) != (res.ChurnP99Ratio > 0) || res.IdleWindows != wantIdle {
				t.Errorf("churn ratios %v (median %v) and %d idle windows; want %d ratios and %d idle windows",
					res.ChurnRatios, res.ChurnP99Ratio, res.IdleWindows, wantChurn, wantIdle)
			}
		})
	}
}

func TestP99RatioRunsARound(t *testing.T) {
	testenv.Integration(t)
	testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last retention.Result
	ratio, err := retention.P99Ratio(retention.Options{
		URL: testenv.PostgresURL(), Rows: 2_000, Callers: 1, Window: 500 * time.Millisecond, Windows: 1,
		Layout: postgres.LayoutPartitioned,
	}, &last)(ctx)
	if err != nil || ratio <= 0 {
		t.Fatalf("Contender round = %v, %v; want a positive ratio", ratio, err)
	}
	if last.P99Ratio != ratio || last.Options.Layout != postgres.LayoutPartitioned {
		t.Errorf("kept result: ratio %v of layout %q, want %v of partitioned", last.P99Ratio, last.Options.Layout, ratio)
	}
}
