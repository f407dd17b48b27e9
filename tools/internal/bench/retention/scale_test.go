//go:build bench

package retention_test

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/tools/internal/bench/retention"
)

var (
	rows    = flag.Int("rows", 1_000_000, "expired records to fill")
	callers = flag.Int("callers", 4, "concurrent claimers")
	window  = flag.Duration("window", 2*time.Second, "length of one measurement window")
	windows = flag.Int("windows", 5, "idle windows, and as many sweeping ones")
	batch   = flag.Int("batch", 0, "sweeper batch (0: postgres.DefaultSweepBatch)")
	pause   = flag.Duration("pause", 0, "sweeper pause between batches")
	layouts = flag.String("layouts", "rows,partitioned", "records layouts to measure, one round each, comma separated")
)

// TestScale is the retention benchmark at full size, one round per layout:
//
//	go test -tags bench -run TestScale -v -timeout 1h ./internal/bench/retention/ -args -rows=10000000
func TestScale(t *testing.T) {
	testenv.Integration(t)
	testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	for _, layout := range strings.Split(*layouts, ",") {
		res, err := retention.Run(ctx, retention.Options{
			URL: testenv.PostgresURL(), Rows: *rows, Callers: *callers,
			Window: *window, Windows: *windows, Batch: *batch, Pause: *pause, Layout: postgres.Layout(layout), Churn: true,
		})
		if err != nil {
			t.Fatalf("Run %s: %v", layout, err)
		}
		check(t, res, *rows)
		t.Logf("RETENTION layout=%s rows=%d fill=%s swept_under_load=%.0f/s drain=%.0f/s p99_idle=%s p99_sweeping=%s ratio=%.2f pairs=%d churn_ratio=%.2f",
			layout, *rows, res.Fill.Round(time.Millisecond), res.UnderLoadRate(), res.DrainRate(),
			res.IdleP99.Round(time.Microsecond), res.SweepP99.Round(time.Microsecond), res.P99Ratio, res.Pairs, res.ChurnP99Ratio)
	}
}
