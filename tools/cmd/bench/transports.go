package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// transportKinds are the transports the flow comparisons measure, in the
// order the report lists them.
var transportKinds = []string{"kafka", "amqp", "sql", "nats", "redisstream", "gochannel"}

// inFlightKinds are the transports that hold more than one message at once
// when HANDLER_CONCURRENCY asks: all but sql, whose Watermill adapter hands
// out one at a time. Only they have concurrency targets and sweep lines.
var inFlightKinds = slices.DeleteFunc(slices.Clone(transportKinds), func(k string) bool { return k == "sql" })

// The contenders of a transport comparison: the receiver off and on at the
// service's default concurrency (flow.DefaultInFlight messages in flight
// per handler), and on at one message in flight (HANDLER_CONCURRENCY=1).
const (
	receiverOff = "off"
	receiverOn  = "on"
	receiverOne = "on-1"
)

// The targets of the transport comparisons, each followed by the kind.
const (
	// receiverTargetPrefix: receiver on / off at the default concurrency.
	receiverTargetPrefix = "transport-"
	// concurrencyTargetPrefix: receiver on at the default concurrency / on
	// at one message in flight.
	concurrencyTargetPrefix = "concurrency-"
)

// TransportSweep names the sweep of the transports' throughput over the
// messages in flight.
const TransportSweep = "transport-concurrency"

// addTransports adds a comparison per transport, receiver off, on, and on
// at one message in flight, their rounds' times kept in times, and the
// sweep of their throughput over the messages in flight. It returns the
// benches, for the caller to close, even on error.
func addTransports(ctx context.Context, plan *bench.Plan, deps bench.Deps, urls brokers, z flowSizes, times roundTimes) ([]*flow.TransportBench, error) {
	env := deps.Env
	var benches []*flow.TransportBench
	sweeps := map[string]*flow.TransportBench{}
	for _, kind := range transportKinds {
		messages, sweepMessages := z.broker, z.sweepBroker
		switch kind {
		case "kafka":
			messages, sweepMessages = z.kafka, z.sweepKafka
		case "gochannel":
			messages, sweepMessages = z.gochannel, z.sweepGochannel
		}
		tb, err := flow.NewTransportBench(ctx, flow.TransportOptions{
			Kind: kind, AMQPURL: urls.amqp, NATSURL: urls.nats, RedisStreamURL: urls.redisStream,
			PostgresURL: env.PostgresURL, Redis: env.Redis,
			Messages: messages, Duplicates: messages / 5,
		})
		if err != nil {
			return benches, fmt.Errorf("transport %s: %w", kind, err)
		}
		benches = append(benches, tb)
		name := receiverTargetPrefix + kind
		// Every round of the comparison is profiled alike, so that what
		// profiling costs weighs on each contender the same; the bound of
		// a missed receiver target reads where the CPU went.
		round := func(o flow.RoundOptions) func(context.Context) (flow.RoundTimes, error) {
			o.Profile = true
			return func(ctx context.Context) (flow.RoundTimes, error) { return tb.RoundWith(ctx, o) }
		}
		contenders := []bench.Contender{
			{Name: receiverOff, Measure: times.measure(name, receiverOff, round(flow.RoundOptions{}))},
			{Name: receiverOn, Measure: times.measure(name, receiverOn, round(flow.RoundOptions{Receiver: true}))},
			{Name: receiverFloor, Measure: times.measure(name, receiverFloor, round(flow.RoundOptions{Floor: true}))},
		}
		targets := []bench.Target{
			{Name: name, Of: receiverOn, Over: receiverOff, Op: bench.AtLeast, Goal: 0.8},
			times.floorTarget(kind, name),
		}
		if slices.Contains(inFlightKinds, kind) {
			contenders = append(contenders, bench.Contender{Name: receiverOne,
				Measure: times.measure(name, receiverOne, round(flow.RoundOptions{Receiver: true, InFlight: 1}))})
			targets = append(targets, bench.Target{Name: concurrencyTargetPrefix + kind, Of: receiverOn, Over: receiverOne,
				Op: bench.AtLeast, Goal: concurrencyGoal})
			// The sweep's rounds send no copies: with hundreds of messages
			// in flight a copy would meet its original in progress and
			// wait for the broker to redeliver it.
			if sweeps[kind], err = tb.Sized(sweepMessages, 0); err != nil {
				return benches, fmt.Errorf("transport %s: %w", kind, err)
			}
		}
		plan.Add(bench.Comparison{Name: name, Unit: "msg/s", Rounds: z.rounds, Contenders: contenders}, targets...)
	}
	var lines []bench.Backend
	for _, kind := range inFlightKinds {
		lines = append(lines, sweepLine(kind, true), sweepLine(kind, false))
	}
	plan.Sweeps = append(plan.Sweeps, bench.Sweep{
		Name: TransportSweep, Axis: "messages in flight", Unit: "msg/s", Values: z.sweepInFlight, Backends: lines, Repeats: 1,
		Plot: "transport throughput by messages in flight per handler, receiver on and off",
		Measure: func(line bench.Backend, inFlight int) func(ctx context.Context) (float64, error) {
			kind, receiver := sweepKind(line)
			return func(ctx context.Context) (float64, error) {
				tb := sweeps[kind]
				if tb == nil {
					return 0, fmt.Errorf("no transport for the line %q", line)
				}
				t, err := tb.RoundWith(ctx, flow.RoundOptions{Receiver: receiver, InFlight: inFlight})
				return t.Rate, err
			}
		},
	})
	return benches, nil
}

// concurrencyGoal is what the default concurrency should buy over one
// message in flight, on a transport and through the whole service.
const concurrencyGoal = 5

// sweepLine names the line of the transport sweep of kind with the
// receiver on or off: "kafka on", say.
func sweepLine(kind string, receiver bool) bench.Backend {
	if receiver {
		return bench.Backend(kind + " on")
	}
	return bench.Backend(kind + " off")
}

// sweepKind is the kind and receiver of a line of the transport sweep.
func sweepKind(line bench.Backend) (kind string, receiver bool) {
	for _, k := range inFlightKinds {
		switch line {
		case sweepLine(k, true):
			return k, true
		case sweepLine(k, false):
			return k, false
		}
	}
	return "", false
}
