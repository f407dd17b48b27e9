package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// The contenders of a service comparison: a plain Watermill consumer that
// only acks, and the whole service at its default concurrency and at one
// message in flight per handler (HANDLER_CONCURRENCY=1).
const (
	plainAck   = "plain-ack"
	serviceDef = "service"
	serviceOne = "service-1"
	// serviceUnguarded is the same service without its receiver (see
	// flow.ServiceBench.UnguardedRound), at the default concurrency.
	serviceUnguarded = "unguarded"
)

// The service comparisons and their targets, each followed by the broker.
const (
	servicePrefix                  = "service-"
	serviceConcurrencyTargetPrefix = "service-concurrency-"
	serviceTaxTargetPrefix         = "service-receiver-tax-"
)

// serviceTaxGoal is the least share of the service's rate without the
// receiver that it keeps with it.
const serviceTaxGoal = 0.8

// serviceUnit is the figure of a service round: requests, each charged,
// noticed and given a receipt, per second.
const serviceUnit = "requests/s"

// addServices adds a comparison per broker of the whole service (see
// flow.ServiceBench), its rounds' times kept in times. The instances run
// only while their comparison does. It returns the benches, for the
// caller to close, even on error.
func addServices(ctx context.Context, plan *bench.Plan, deps bench.Deps, urls brokers, z flowSizes, times roundTimes) ([]*flow.ServiceBench, error) {
	env := deps.Env
	var benches []*flow.ServiceBench
	for _, kind := range flow.ServiceKinds {
		requests := z.serviceRequests
		if kind == "sql" {
			// One message in flight per handler passes a few hundred
			// requests a second: a quarter as many keep its rounds as
			// short as the others'.
			requests = max(1, requests/4)
		}
		sb, err := flow.NewServiceBench(ctx, flow.ServiceOptions{
			Kind: kind, AMQPURL: urls.amqp, NATSURL: urls.nats, RedisStreamURL: urls.redisStream,
			PostgresURL: env.BaseURL(), RedisAddr: env.RedisAddr, Requests: requests, DatabaseMaxConns: z.serviceMaxConns,
		})
		if err != nil {
			return benches, fmt.Errorf("service on %s: %w", kind, err)
		}
		benches = append(benches, sb)
		name := servicePrefix + kind
		at := func(concurrency int) func(context.Context) (flow.RoundTimes, error) {
			return func(ctx context.Context) (flow.RoundTimes, error) { return sb.Round(ctx, concurrency) }
		}
		contenders := []bench.Contender{
			{Name: plainAck, Measure: times.measure(name, plainAck, sb.PlainRound)},
			{Name: serviceDef, Measure: times.measure(name, serviceDef, at(flow.DefaultInFlight))},
			{Name: serviceUnguarded, Measure: times.measure(name, serviceUnguarded, func(ctx context.Context) (flow.RoundTimes, error) {
				return sb.UnguardedRound(ctx, flow.DefaultInFlight)
			})},
		}
		targets := []bench.Target{{Name: serviceTaxTargetPrefix + kind, Of: serviceDef, Over: serviceUnguarded,
			Op: bench.AtLeast, Goal: serviceTaxGoal}}
		if slices.Contains(inFlightKinds, kind) {
			contenders = append(contenders, bench.Contender{Name: serviceOne, Measure: times.measure(name, serviceOne, at(1))})
			targets = append(targets, bench.Target{Name: serviceConcurrencyTargetPrefix + kind, Of: serviceDef, Over: serviceOne,
				Op: bench.AtLeast, Goal: concurrencyGoal})
		}
		plan.Add(bench.Comparison{Name: name, Unit: serviceUnit, Rounds: z.serviceRounds, Contenders: contenders, Done: sb.Stop}, targets...)
		if kind == "kafka" {
			// Where the CPU goes when the service's concurrency target
			// finds the cores busy; the run closes the instance.
			plan.Profiles = append(plan.Profiles, bench.Profiled{
				Name:    fmt.Sprintf("whole service on Kafka, %d messages in flight per handler (producer and in-process broker included)", flow.DefaultInFlight),
				Prepare: func(ctx context.Context) error { return sb.Start(ctx, flow.DefaultInFlight) },
				Round: func(ctx context.Context) (float64, error) {
					t, err := sb.Round(ctx, flow.DefaultInFlight)
					return t.Rate, err
				},
				CPUOnly: true,
			})
		}
	}
	return benches, nil
}

// taxBound states, for each broker whose receiver-tax target was missed,
// which part of a request's CPU the receiver is: the machine's CPU per
// request without the receiver and with it, and where it went, summed over
// the rounds (see cpuSplit), with the cores' bound on the ratio as the
// transport bounds give it (see coreBound).
func (r roundTimes) taxBound(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, serviceTaxTargetPrefix)
		if !ok || v.Pass {
			continue
		}
		offs, ons := r.of(v.Comparison, serviceUnguarded), r.of(v.Comparison, serviceDef)
		if len(ons) == 0 || len(ons) != len(offs) {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Bound: %s: the machine spent %s of CPU per request without the receiver (%.0f requests/s, its cores %.0f%% busy) "+
			"and %s with it (%.0f requests/s, %.0f%% busy), medians over %d rounds (measured %.3f, goal %g).",
			v.Name, medianCPU(offs), medianField(offs, rate), 100*medianField(offs, busy), medianCPU(ons), medianField(ons, rate),
			100*medianField(ons, busy), len(ons), v.Value, v.Goal)
		if c, ok := coreBound(ons, offs); ok {
			fmt.Fprintf(&b, " With every core busy at the same CPU cost per request the ratio would be at most %.2f.", c.bound)
		}
		if split := cpuSplit(kind, offs, ons); split != "" {
			fmt.Fprintf(&b, " Per request, summed over the rounds, without → with: %s.", split)
		}
		lines = append(lines, b.String())
	}
	return lines, nil
}
