// Package retention measures the PostgreSQL sweeper at scale: how fast it
// removes a backlog of expired idempotency records, and how much it slows
// claims while it does, on either layout of the records table (see
// Options.Layout): the rows layout deletes expired rows in batches, the
// partitioned one drops whole partitions.
//
// A round creates its own schema in the target database, migrates it, fills
// it with Options.Rows expired records, then alternates measurement windows
// in which a few callers run Claim+Complete on unique keys through the real
// store, with the sweeper idle and with it sweeping. In the partitioned
// layout the records fill one partition per sweeping window, and each
// sweeping window's sweeper finds the next of them droppable, as the
// service's sweeper finds one each hour; the rows layout's sweeper deletes
// the one backlog until it is gone. After the windows the sweeper drains
// what is left with no claims running. The schema is dropped
// at the end. The figures are those of one machine at one moment: compare
// ratios, not absolute times.
package retention

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/stores/postgres"
)

// DefaultURL is the database a round uses unless Options.URL says otherwise.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Options configures a round. The zero value is ready to use.
type Options struct {
	// URL is the database in which the round creates, and drops, its
	// schema. Default DefaultURL.
	URL string
	// Rows is how many expired records the round fills before measuring.
	// Default 1,000,000.
	Rows int
	// Callers is how many goroutines claim concurrently. Default 4.
	Callers int
	// Window is the length of one measurement window. Default 2s.
	Window time.Duration
	// Windows is how many sweeping windows the round runs, each between
	// two idle ones (Windows+1 idle windows in all); the fill spreads the
	// records over as many hours. Default 5.
	Windows int
	// Batch and Pause configure the sweeper of the rows layout (see
	// postgres.SweeperConfig). Default postgres.DefaultSweepBatch and no
	// pause.
	Batch int
	Pause time.Duration
	// Churn adds, in the partitioned layout, a churn window and an idle
	// window after each sweeping window's idle one: the churn window
	// changes the partitions, and its sweeper makes its passes, as in a
	// sweeping window (see churnWindow), but removes no record, so its
	// ratio tells the cost of retention's upkeep from that of removing
	// records. The rows layout has no
	// partitions to change and ignores it.
	Churn bool
	// Layout is the records table's layout. Default postgres.LayoutRows.
	// In the partitioned layout the fill's records spread over Windows
	// partitions of postgres.DefaultPartitionWidth, whose records all
	// expired an hour apart, and sweeping window k's sweeper has the grace
	// that makes partition k, and no later one, droppable (see
	// Bench.Measure).
	Layout postgres.Layout
}

func (o Options) withDefaults() Options {
	if o.URL == "" {
		o.URL = DefaultURL
	}
	if o.Rows <= 0 {
		o.Rows = 1_000_000
	}
	if o.Callers <= 0 {
		o.Callers = 4
	}
	if o.Window <= 0 {
		o.Window = 2 * time.Second
	}
	if o.Windows <= 0 {
		o.Windows = 5
	}
	if o.Batch <= 0 {
		o.Batch = postgres.DefaultSweepBatch
	}
	if o.Pause < 0 {
		o.Pause = 0
	}
	if o.Layout == "" {
		o.Layout = postgres.LayoutRows
	}
	return o
}

// Result holds the figures of one round.
type Result struct {
	Options Options
	// Fill is how long filling Rows expired records took, including the
	// VACUUM ANALYZE after it.
	Fill time.Duration
	// IdleP99 and SweepP99 are the 99th percentile of Claim latency over
	// the idle windows and over the sweeping windows; IdleClaims and
	// SweepClaims are how many claims each was computed from.
	IdleP99, SweepP99       time.Duration
	IdleClaims, SweepClaims int
	// P99Ratio is the median, over the sweeping windows, of a window's
	// p99 divided by that of the idle windows either side of it (their
	// claims pooled; a pair, below, is a sweeping window and its two idle
	// neighbours): 1.2 means sweeping made the slowest claims 20% slower.
	// Comparing adjacent windows keeps a burst of unrelated load on the
	// machine from deciding the figure, and idle windows on both sides
	// keep claims' slowing over a round, as the table grows, from being
	// charged to retention. Only pairs whose sweeping window removed
	// filled records count (Pairs of them, at most Windows; Ratios holds
	// their ratios in window order): a window with nothing left to remove
	// would say nothing about retention's cost. In the partitioned layout
	// every sweeping window drops one partition; the rows layout's backlog
	// may run out before the last window.
	P99Ratio float64
	Pairs    int
	Ratios   []float64
	// ChurnP99Ratio is P99Ratio's figure for the churn windows (see
	// Options.Churn), each against the idle windows either side of it:
	// the median of ChurnRatios, one per churn window. Zero without them.
	ChurnP99Ratio float64
	ChurnRatios   []float64
	// IdleWindows is how many idle windows the round ran: Windows+1, and
	// one more per churn window.
	IdleWindows int
	// SweptUnderLoad is how many records the sweeper removed during the
	// sweeping windows, which lasted SweepTime in all; SweepBusy is the
	// part of it spent in passes that removed records and, in the
	// partitioned layout, creating the next partition (it drops its
	// partition in a fraction of each window).
	SweptUnderLoad int64
	SweepTime      time.Duration
	SweepBusy      time.Duration
	// Drained is how many records the sweeper removed after the windows,
	// with no claims running, in DrainTime.
	Drained   int64
	DrainTime time.Duration
	// Left is how many of the filled records remained after the drain:
	// zero unless the sweeper missed some.
	Left int64
}

// ClaimsRatio is the claims per sweeping window over the claims per idle
// window: the claim throughput while sweeping relative to idle, the windows
// being of equal length.
func (r Result) ClaimsRatio() float64 {
	if r.IdleClaims == 0 || r.Options.Windows == 0 || r.IdleWindows == 0 {
		return 0
	}
	return (float64(r.SweepClaims) / float64(r.Options.Windows)) / (float64(r.IdleClaims) / float64(r.IdleWindows))
}

// UnderLoadRate is the records removed per second while claims ran, over
// the time of the passes that removed them (SweepBusy), or over SweepTime
// when that is unknown.
func (r Result) UnderLoadRate() float64 {
	if r.SweepBusy > 0 {
		return rate(r.SweptUnderLoad, r.SweepBusy)
	}
	return rate(r.SweptUnderLoad, r.SweepTime)
}

// DrainRate is the records removed per second with no claims running.
func (r Result) DrainRate() float64 { return rate(r.Drained, r.DrainTime) }

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// String renders r on a few lines for a log.
func (r Result) String() string {
	return fmt.Sprintf("layout %s: rows %d filled in %s\n"+
		"claim p99 idle %s (%d claims), sweeping %s (%d claims); median ratio of %d of %d window pairs %.2fx %s; claims/s sweeping vs idle %.2fx\n"+
		"%s"+
		"swept under load %d rows in %s of passes (%s of windows): %.0f rows/s\n"+
		"drained %d rows in %s: %.0f rows/s; %d left\n"+
		"callers %d, windows %d x %s, batch %d, pause %s",
		r.Options.Layout, r.Options.Rows, r.Fill.Round(time.Millisecond),
		r.IdleP99.Round(time.Microsecond), r.IdleClaims, r.SweepP99.Round(time.Microsecond), r.SweepClaims, r.Pairs, r.Options.Windows, r.P99Ratio, formatRatios(r.Ratios), r.ClaimsRatio(),
		r.churnLine(),
		r.SweptUnderLoad, r.SweepBusy.Round(time.Millisecond), r.SweepTime.Round(time.Millisecond), r.UnderLoadRate(),
		r.Drained, r.DrainTime.Round(time.Millisecond), r.DrainRate(), r.Left,
		r.Options.Callers, r.Options.Windows, r.Options.Window, r.Options.Batch, r.Options.Pause)
}

// churnLine is String's line on the churn windows, if the round had any.
func (r Result) churnLine() string {
	if len(r.ChurnRatios) == 0 {
		return ""
	}
	return fmt.Sprintf("churn windows: median ratio %.2fx %s\n", r.ChurnP99Ratio, formatRatios(r.ChurnRatios))
}

// formatRatios renders ratios as [1.02 0.97 ...].
func formatRatios(ratios []float64) string {
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = strconv.FormatFloat(r, 'f', 2, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Run runs one round: Open, Fill, Measure, Close.
func Run(ctx context.Context, opts Options) (res Result, err error) {
	b, err := Open(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if cerr := b.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	fill, err := b.Fill(ctx)
	if err != nil {
		return Result{}, err
	}
	res, err = b.Measure(ctx)
	res.Fill = fill
	return res, err
}

// P99Ratio returns a function that runs one round with opts and returns its
// Result.P99Ratio: the Measure of a contender in a benchmark harness. When
// last is not nil, it also keeps there the Result of the latest round.
func P99Ratio(opts Options, last *Result) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		res, err := Run(ctx, opts)
		if err != nil {
			return 0, err
		}
		if last != nil {
			*last = res
		}
		return res.P99Ratio, nil
	}
}
