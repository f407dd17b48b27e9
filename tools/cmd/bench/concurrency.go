package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// concurrencyBound states, for each missed concurrency target (a
// transport's, concurrency-<kind>, or the whole service's,
// service-concurrency-<kind>), what held the default concurrency's rate
// back, from the rounds whose ratio the target judges. Round by round:
//
//   - the cores: a round at the default concurrency that kept the
//     machine's cores busy a share u of the time would pass at most 1/u
//     times as many messages at the same CPU cost per message, whatever
//     its concurrency; so the ratio is at most (high / u) / low (see
//     coreBound);
//   - on the service, the producer and the broker: the plain consumer
//     that only acks receives what they pass it, so the service's ratio is
//     at most plain / low;
//   - on a transport, its lanes: by Little's law the lanes held rate x
//     time-per-message messages at a time; a transport that keeps fewer
//     than half of them busy bounds the ratio by its delivery.
//
// Each figure is the median over the rounds.
func (r roundTimes) concurrencyBound(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		service := strings.HasPrefix(v.Name, serviceConcurrencyTargetPrefix)
		if v.Pass || !(service || strings.HasPrefix(v.Name, concurrencyTargetPrefix)) {
			continue
		}
		highs, lows := r.of(v.Comparison, v.Of), r.of(v.Comparison, v.Over)
		if len(highs) == 0 || len(highs) != len(lows) {
			continue
		}
		var plains []flow.RoundTimes
		if service {
			if plains = r.of(v.Comparison, plainAck); len(plains) != len(highs) {
				plains = nil
			}
		}
		lines = append(lines, concurrencyLine(v, highs, lows, plains))
	}
	return lines, nil
}

// concurrencyLine is the bound of verdict v from its rounds at the default
// concurrency (highs), at one message in flight (lows) and, on the
// service, of the plain consumer.
func concurrencyLine(v bench.Verdict, highs, lows, plains []flow.RoundTimes) string {
	var processHigh, busyLow, broker []float64
	for i := range highs {
		if u := highs[i].Process; u >= 0 {
			processHigh = append(processHigh, u)
		}
		if u := lows[i].Busy; u >= 0 {
			busyLow = append(busyLow, u)
		}
		if plains != nil && lows[i].Rate > 0 {
			broker = append(broker, plains[i].Rate/lows[i].Rate)
		}
	}
	what, unit := "the receiver-on rounds pass", "msg/s"
	if plains != nil || strings.HasPrefix(v.Name, serviceConcurrencyTargetPrefix) {
		what, unit = "the service passes", serviceUnit
	}
	lanes := highs[0].Lanes
	var b strings.Builder
	fmt.Fprintf(&b, "Bound: %s: with %d messages in flight per handler %s %.0f %s, with one %.0f (measured %.3f, goal %g).",
		v.Name, lanes, what, medianField(highs, rate), unit, medianField(lows, rate), v.Value, v.Goal)
	atCores, atBroker := math.Inf(1), math.Inf(1)
	if c, ok := coreBound(highs, lows); ok {
		atCores = c.bound
		var of []string
		if len(processHigh) > 0 {
			of = append(of, fmt.Sprintf("%.0f%% of them by this process, the rest by the brokers and any other tenant", 100*medianOf(processHigh)))
		}
		if len(busyLow) > 0 {
			of = append(of, fmt.Sprintf("%.0f%% busy with one", 100*medianOf(busyLow)))
		}
		detail := ""
		if len(of) > 0 {
			detail = " (" + strings.Join(of, "; ") + ")"
		}
		fmt.Fprintf(&b, " The machine's cores were %.0f%% busy with %d in flight%s: %s.", 100*c.busy, lanes, detail, c)
	}
	if len(broker) > 0 {
		atBroker = medianOf(broker)
		fmt.Fprintf(&b, " A consumer that only acks, fed by the same producer, receives %.2f x the service's rate with one in flight: the most the producer and the broker let the ratio be.",
			atBroker)
	}
	occupancy, ok := laneUse(highs)
	if ok {
		fmt.Fprintf(&b, " The %d lanes held %.1f messages at a time on average (Little's law), each taking %s in its lane against %s with one in flight, %s of it waiting on the store against %s.",
			lanes, occupancy, medianDuration(highs, handling), medianDuration(lows, handling),
			medianDuration(highs, storeWait), medianDuration(lows, storeWait))
	}
	verdict := "within reach of the cores"
	switch {
	case atCores < v.Goal:
		verdict = "out of reach on this machine: its cores, not the messages in flight, bound the rate"
	case atBroker < v.Goal:
		verdict = "out of reach of the producer and the broker on this machine"
	case ok && occupancy < float64(lanes)/2:
		verdict = "bound by the transport: it kept fewer than half its lanes busy"
	case ok:
		verdict = "within reach of the cores and the lanes were busy: each message took longer in its lane as more shared the machine and the store"
	}
	fmt.Fprintf(&b, " Verdict: %s.", verdict)
	return b.String()
}

// laneUse is the median occupancy of the rounds' lanes, and false when the
// rounds did not time their deliveries (the service's).
func laneUse(rounds []flow.RoundTimes) (float64, bool) {
	occupancy := make([]float64, 0, len(rounds))
	for _, t := range rounds {
		if t.Handling > 0 {
			occupancy = append(occupancy, t.Occupancy())
		}
	}
	if len(occupancy) != len(rounds) {
		return 0, false
	}
	return medianOf(occupancy), true
}

func handling(t flow.RoundTimes) time.Duration  { return t.Handling }
func storeWait(t flow.RoundTimes) time.Duration { return t.StoreWait }

// medianDuration is the median of field over rounds, to the microsecond.
func medianDuration(rounds []flow.RoundTimes, field func(flow.RoundTimes) time.Duration) time.Duration {
	ds := make([]time.Duration, len(rounds))
	for i, t := range rounds {
		ds[i] = field(t)
	}
	return medianOf(ds).Round(time.Microsecond)
}

// fillNote states how full the Redis store's claim batches ran in the
// transport and service rounds with the receiver on, at the default
// concurrency and at one message in flight: the medians over each
// contender's rounds of their mean claims per batch.
func (r roundTimes) fillNote(_ context.Context, rep *bench.Report) ([]string, error) {
	fill := func(comparison, contender string) (float64, bool) {
		var means []float64
		for _, t := range r.of(comparison, contender) {
			if !math.IsNaN(t.ClaimsPerBatch) {
				means = append(means, t.ClaimsPerBatch)
			}
		}
		if len(means) == 0 {
			return 0, false
		}
		return medianOf(means), true
	}
	list := func(prefix string, kinds []string, def, one string) []string {
		var parts []string
		for _, kind := range kinds {
			name := prefix + kind
			m, ok := fill(name, def)
			if !ok {
				continue
			}
			part := fmt.Sprintf("%s %.1f", name, m)
			if m1, ok := fill(name, one); ok {
				part += fmt.Sprintf(" (%.1f with one in flight)", m1)
			}
			parts = append(parts, part)
		}
		return parts
	}
	transports := list(receiverTargetPrefix, transportKinds, receiverOn, receiverOne)
	services := list(servicePrefix, flow.ServiceKinds, serviceDef, serviceOne)
	if len(transports) == 0 && len(services) == 0 {
		return nil, nil
	}
	line := fmt.Sprintf("Batch fill: with %d messages in flight per handler, the claim batches of the Redis store (as the service sets it up: "+
		"STORE_BATCH_SIZE %d, behind the local cache) carried on average, median over the rounds, with the receiver on: %s",
		flow.DefaultInFlight, bench.ServiceBatchSize, strings.Join(transports, ", "))
	if len(services) > 0 {
		line += "; through the whole service, its three routes each holding as many: " + strings.Join(services, ", ")
	}
	return []string{line + ". A claim answered by the cache, as a copy's is, sends none."}, nil
}

// sqlNote says why the sql transport has no concurrency target, when its
// comparisons ran.
func sqlNote(_ context.Context, rep *bench.Report) ([]string, error) {
	if _, ok := rep.Result(receiverTargetPrefix + "sql"); !ok {
		return nil, nil
	}
	return []string{"The sql transport holds one message in flight whatever HANDLER_CONCURRENCY says (its Watermill adapter hands out one at a time), " +
		"so it has no concurrency target, no line in the " + TransportSweep + " sweep and no " + serviceOne + " contender."}, nil
}
