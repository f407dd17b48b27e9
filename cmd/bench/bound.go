package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/bench"
	"github.com/onceflow/onceflow/internal/bench/flow"
)

// storeWaits keeps, per transport, how long each of its receiver-on rounds
// waited on the Redis store per delivery (see flow.TransportBench.ReceiverRound),
// in round order: the time the bound of its target is made of, measured
// in the very rounds whose ratio it bounds.
type storeWaits map[string][]time.Duration

// on returns the receiver-on contender of transport kind: one round of tb
// with the receiver on, its store wait kept.
func (w storeWaits) on(kind string, tb *flow.TransportBench) func(context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		rate, wait, err := tb.ReceiverRound(ctx)
		if err != nil {
			return 0, err
		}
		w[kind] = append(w[kind], wait)
		return rate, nil
	}
}

// note states, for each transport whose target was missed, where a
// message's time goes with the receiver on and the most its ratio can be
// given the store waits of its own rounds. A lane hands the router one
// message at a time, and with the receiver on each message waits w for its
// Claim and Complete. In a round in which the transport delivers off
// messages/s over lanes with the receiver off:
//
//   - whatever else it does, a lane passes at most one message per w, so
//     the ratio is at most lanes / (off x w): the bound should the
//     transport do all its own work while its lanes wait;
//   - while a lane's own work and its waits take turns, each message costs
//     lanes/off plus w, so the ratio is at most lanes / (lanes + off x w).
//
// Which of the two applies the rounds show: a lane's time with the receiver
// on, less its waits, is no less than its time with the receiver off when
// its own work did not hide behind them. Each bound is the median over the
// rounds, each round's off beside the same round's wait.
func (w storeWaits) note(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, "transport-")
		if !ok || v.Pass {
			continue
		}
		res, _ := rep.Result(v.Comparison)
		offs, ok1 := res.Contender("off")
		ons, ok2 := res.Contender("on")
		waits, off, on := w[kind], offs.Median, ons.Median
		if !ok1 || !ok2 || off <= 0 || on <= 0 || len(waits) == 0 || len(offs.Values) != len(waits) {
			continue
		}
		lanes := float64(transportLanes[kind])
		turns, overlapped := make([]float64, len(waits)), make([]float64, len(waits))
		for i, wait := range waits {
			turns[i] = lanes / (lanes + offs.Values[i]*wait.Seconds())
			overlapped[i] = min(1, lanes/(offs.Values[i]*wait.Seconds()))
		}
		atTurns, atOverlap, wait := medianOf(turns), medianOf(overlapped), medianOf(waits)
		laneOff, laneOn := laneTime(lanes, off), laneTime(lanes, on)
		rest := laneOn - wait - laneOff
		besides := fmt.Sprintf("%s more than with it off besides", rest.Round(time.Microsecond))
		if rest < 0 {
			besides = fmt.Sprintf("%s less than with it off besides: the transport did part of its work while its lanes waited", (-rest).Round(time.Microsecond))
		}
		var verdict string
		switch {
		case atOverlap < v.Goal:
			verdict = "out of reach: even with all of the transport's own work done while its lanes wait, a lane passes at most one message per wait"
		case atTurns < v.Goal && rest >= 0:
			verdict = "out of reach while a lane's own work and its waits take turns, as they did in these rounds; " +
				"only a transport that works ahead while its lanes wait could pass the goal"
		default:
			verdict = "within reach of the waits; the rest is the receiver's own cost"
		}
		lines = append(lines, fmt.Sprintf("Bound: transport-%s: a lane (%.0f in all) takes %s per message with the receiver off (%.0f msg/s) "+
			"and %s with it on: %s waiting on the Redis store's Claim and Complete, timed around them in the same rounds, and %s. "+
			"The waits hold receiver on / off to at most %.3f while a lane's work and its waits take turns, and to at most %.3f "+
			"should they overlap entirely (medians over %d rounds; measured %.3f, goal %g): %s.",
			kind, lanes, laneOff, off, laneOn, wait.Round(time.Microsecond), besides,
			atTurns, atOverlap, len(waits), v.Value, v.Goal, verdict))
	}
	return lines, nil
}

// laneTime is how long one of lanes takes per message at rate messages per
// second over them all.
func laneTime(lanes, rate float64) time.Duration {
	return time.Duration(lanes / rate * float64(time.Second)).Round(time.Microsecond)
}

// medianOf returns the middle value of v (the upper one of an even count).
func medianOf[T float64 | time.Duration](v []T) T {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
