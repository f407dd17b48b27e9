package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
	"github.com/onceflow/onceflow/tools/internal/bench/retention"
)

// flowSizes are the messages (or requests) per round of each flow bench,
// and the rounds of each comparison.
type flowSizes struct {
	// rounds is how many interleaved rounds each transport and mode
	// comparison runs: five at the short and full sizes, as a round of
	// these moves thousands of messages through a broker, and five keep one
	// slow round from setting the median.
	rounds int
	// httpRounds is how many rounds the HTTP latency comparisons run. With
	// 16 clients on two cores a request's latency is mostly its wait for a
	// CPU, and a round's p50 moves by a fifth from one round to the next; a
	// round costs under two seconds, so nine of them settle the median
	// cheaply.
	httpRounds int

	kafka, broker, gochannel, mode, requests int
	// sweepKafka, sweepBroker and sweepGochannel are the messages of a
	// transport sweep's round, which has no copies; sweepInFlight its
	// axis.
	sweepKafka, sweepBroker, sweepGochannel int
	sweepInFlight                           []int
	// serviceRequests is the requests of a service round; serviceRounds
	// the rounds of a service comparison.
	serviceRequests, serviceRounds int
	// serviceMaxConns, when positive, is the DATABASE_MAX_CONNS of the
	// service rounds' instances, instead of the service's default: at the
	// tiny size, which make test runs beside the other suites on one
	// server, the four instances of a service comparison would otherwise
	// hold up to 80 of its connections.
	serviceMaxConns int
	// retention is the retention bench at this size: a backlog of
	// expired records far smaller than make bench-retention's.
	retention retention.Options
}

func sizesFor(z bench.Size) flowSizes {
	switch z {
	case bench.Tiny:
		// A retention window must hold a partition drop (create ahead,
		// DETACH CONCURRENTLY, DROP), which takes a few hundred
		// milliseconds on a machine busy with the race detector's tests.
		return flowSizes{rounds: 2, httpRounds: 2, kafka: 200, broker: 100, gochannel: 200, mode: 30, requests: 200,
			sweepKafka: 100, sweepBroker: 50, sweepGochannel: 100, sweepInFlight: []int{1, 16},
			serviceRequests: 40, serviceRounds: 2, serviceMaxConns: 4,
			retention: retention.Options{Rows: 2_000, Window: 500 * time.Millisecond, Windows: 2}}
	case bench.Full:
		return flowSizes{rounds: 5, httpRounds: 9, kafka: 10_000, broker: 2_000, gochannel: 5_000, mode: 300, requests: 4_000,
			sweepKafka: 4_000, sweepBroker: 1_000, sweepGochannel: 2_000, sweepInFlight: []int{1, 4, 16, 64, 256},
			serviceRequests: 800, serviceRounds: 5,
			retention: retention.Options{Rows: 300_000}}
	default:
		return flowSizes{rounds: 5, httpRounds: 9, kafka: 4_000, broker: 1_000, gochannel: 2_000, mode: 150, requests: 2_000,
			sweepKafka: 2_000, sweepBroker: 500, sweepGochannel: 1_000, sweepInFlight: []int{1, 16, 256},
			serviceRequests: 500, serviceRounds: 3,
			retention: retention.Options{Rows: 50_000, Window: time.Second}}
	}
}

// brokers are the URLs of the brokers the transport benches run on besides
// Kafka (in process) and PostgreSQL (the run's database).
type brokers struct{ amqp, nats, redisStream string }

// extend adds the comparisons of whole flows, measured by package flow:
// every transport with the receiver on and off and at one message in
// flight, and the sweep of their throughput over the messages in flight;
// the whole service on every broker; lease against transaction mode; and
// the HTTP middleware's latency; and the sweeper's effect on claims
// (package retention). It returns what closes their benches.
func extend(ctx context.Context, plan *bench.Plan, deps bench.Deps, urls brokers) (func() error, error) {
	env, z := deps.Env, sizesFor(plan.Size)
	times := roundTimes{}
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}

	tbs, err := addTransports(ctx, plan, deps, urls, z, times)
	for _, tb := range tbs {
		closers = append(closers, tb.Close)
	}
	if err != nil {
		return closeAll, err
	}
	sbs, err := addServices(ctx, plan, deps, urls, z, times)
	for _, sb := range sbs {
		closers = append(closers, sb.Close)
	}
	if err != nil {
		return closeAll, err
	}
	plan.Notes = append(plan.Notes, times.receiverBound, times.floorNote, times.taxBound, times.concurrencyBound, times.fillNote, sqlNote)

	mb, err := flow.NewModeBench(ctx, flow.ModeOptions{PostgresURL: env.PostgresURL, Messages: z.mode})
	if err != nil {
		return closeAll, fmt.Errorf("mode bench: %w", err)
	}
	closers = append(closers, mb.Close)
	plan.Add(bench.Comparison{Name: "sql-modes", Unit: "msg/s", Rounds: z.rounds, Contenders: []bench.Contender{
		{Name: "lease", Measure: func(ctx context.Context) (float64, error) { return mb.Round(ctx, flow.LeaseMode) }},
		{Name: "transaction", Measure: func(ctx context.Context) (float64, error) { return mb.Round(ctx, flow.TransactionMode) }},
	}})

	hb, err := flow.NewHTTPBench(ctx, flow.HTTPOptions{Redis: env.Redis, Requests: z.requests})
	if err != nil {
		return closeAll, fmt.Errorf("http bench: %w", err)
	}
	closers = append(closers, hb.Close)
	for _, p := range []float64{50, 99} {
		var cs []bench.Contender
		for _, v := range []flow.Variant{flow.NoMiddleware, flow.MemoryStore, flow.RedisStore} {
			cs = append(cs, bench.Contender{Name: string(v), Measure: func(ctx context.Context) (float64, error) { return hb.Round(ctx, v, p) }})
		}
		name := fmt.Sprintf("http-p%g", p)
		c := bench.Comparison{Name: name, Unit: "µs", LowerIsBetter: true, Rounds: z.httpRounds, Contenders: cs}
		if p == 50 {
			plan.Add(c, bench.Target{Name: "http-idempotency-p50-memory", Of: string(flow.MemoryStore), Over: string(flow.NoMiddleware), Op: bench.AtMost, Goal: 1.25})
		} else {
			plan.Add(c)
		}
	}
	// One round per layout: its figure is itself the median over its
	// sweeping windows, each against the idle windows either side of it.
	// The target judges the partitioned layout, the one the README
	// recommends for high volume, and only a figure over every sweeping
	// window; the note prints both layouts.
	var contenders []bench.Contender
	results := map[postgres.Layout]*retention.Result{}
	for _, layout := range retentionLayouts {
		ro := z.retention
		ro.URL, ro.Layout, ro.Churn = env.BaseURL(), layout, true
		results[layout] = &retention.Result{}
		measure := retention.P99Ratio(ro, results[layout])
		if layout == postgres.LayoutPartitioned {
			measure = everyPair(measure, results[layout])
		}
		contenders = append(contenders, bench.Contender{Name: string(layout), Measure: measure})
	}
	plan.Add(bench.Comparison{Name: "retention", Unit: "claim p99 sweeping / idle", LowerIsBetter: true, Rounds: 1,
		Contenders: contenders},
		bench.Target{Name: retentionTarget, Of: string(postgres.LayoutPartitioned), Op: bench.AtMost, Goal: 1.2})
	plan.Notes = append(plan.Notes, retentionNote(results))
	return closeAll, nil
}

// everyPair wraps the retention round measure, which keeps its Result in
// last, and fails a round whose ratio is the median of fewer pairs than it
// had sweeping windows: some of them then had nothing to remove, and the
// target judges retention's cost in every window or not at all.
func everyPair(measure func(context.Context) (float64, error), last *retention.Result) func(context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		v, err := measure(ctx)
		if err != nil {
			return 0, err
		}
		if last.Pairs < last.Options.Windows {
			return 0, fmt.Errorf("only %d of %d sweeping windows removed records: the median of %d pairs is not judged",
				last.Pairs, last.Options.Windows, last.Pairs)
		}
		return v, nil
	}
}

// retentionTarget judges the partitioned layout's claim p99 ratio.
const retentionTarget = "retention-claim-p99"

// retentionLayouts are the records layouts the retention comparison
// measures, in the order the report lists them.
var retentionLayouts = []postgres.Layout{postgres.LayoutRows, postgres.LayoutPartitioned}

// retentionNote states, per records layout, the claim p99 ratio while
// retention runs and how fast it removed the backlog, so the report shows
// the rows layout's figures beside the partitioned one's that the target
// judges; and, when that target is missed, how much of the partitioned
// ratio the partition changes alone cost, measured in the churn windows of
// the same round (see retention.Options.Churn).
func retentionNote(results map[postgres.Layout]*retention.Result) bench.Note {
	return func(_ context.Context, rep *bench.Report) ([]string, error) {
		var lines []string
		for _, layout := range retentionLayouts {
			r := results[layout]
			if r.Options.Rows == 0 {
				continue // the round did not run
			}
			drained := "all of them under claims"
			if r.Drained > 0 {
				drained = fmt.Sprintf("the %d left drained alone at %.0f/s", r.Drained, r.DrainRate())
			}
			pairs := fmt.Sprintf("%d of %d sweeping windows", r.Pairs, r.Options.Windows)
			if r.Pairs < r.Options.Windows {
				pairs += ", the others having nothing left to remove"
			}
			lines = append(lines, fmt.Sprintf("Retention, %s layout, %d expired records: claim p99 while it runs %.3fx idle "+
				"(median over %s, each against the idle windows either side; p99 %s idle, %s running); "+
				"removed %.0f records/s under claims, %s.",
				layout, r.Options.Rows, r.P99Ratio, pairs, r.IdleP99.Round(time.Microsecond), r.SweepP99.Round(time.Microsecond),
				r.UnderLoadRate(), drained))
		}
		if len(lines) > 0 {
			lines = append(lines, "The "+retentionTarget+" target judges the partitioned layout, which the README recommends for high volume.")
		}
		if r := results[postgres.LayoutPartitioned]; len(r.ChurnRatios) > 0 {
			lines = append(lines, churnLines(r, rep)...)
		}
		return lines, nil
	}
}

// churnLines states the partitioned round's churn windows beside its
// sweeping windows, and when retention-claim-p99 is missed, whether the
// partition changes alone already cost more than its goal.
func churnLines(r *retention.Result, rep *bench.Report) []string {
	lines := []string{fmt.Sprintf("Retention, partitioned layout: windows that change the partitions and make the sweeper's passes as a sweeping window does "+
		"(create the next partition, detach one CONCURRENTLY and drop it) but remove no record slow claim p99 %.3fx "+
		"(median over %d churn windows of the same round, each against the idle windows either side), "+
		"against %.3fx for the sweeping windows: every change makes each connection plan its claim again.",
		r.ChurnP99Ratio, len(r.ChurnRatios), r.P99Ratio)}
	v, missed := rep.Missed(retentionTarget)
	if !missed {
		return lines
	}
	verdict := "not bound by the partition changes, which stayed under the goal in this round: " +
		"the sweeping windows' excess over them is the removal of records, or this round's noise"
	if r.ChurnP99Ratio > v.Goal {
		verdict = "out of reach at this pace: the partition changes alone, which remove nothing, cost claims more than the goal allows; " +
			"the service makes two changes an hour, the round two in every sweeping window"
	}
	return append(lines, fmt.Sprintf("Bound: %s: the partition changes alone measure %.3fx against the goal %g (measured %.3f): %s.",
		v.Name, r.ChurnP99Ratio, v.Goal, v.Value, verdict))
}
