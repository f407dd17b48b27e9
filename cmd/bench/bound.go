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
// given the store waits of its own rounds: a lane handles one message at a
// time and waits for the receiver's Claim and Complete, so in a round in
// which the transport delivers off messages/s over lanes with the receiver
// off and a delivery waits w on the store with it on, the ratio is at most
// lanes / (lanes + off x w), whatever the receiver's own code costs. The
// bound is the median of that over the rounds, each round's off beside
// the same round's wait.
func (w storeWaits) note(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, "transport-")
		if !ok || v.Pass {
			continue
		}
		res, _ := rep.Result(v.Comparison)
		offs, _ := res.Contender("off")
		waits := w[kind]
		off, ok1 := res.Median("off")
		on, ok2 := res.Median("on")
		if !ok1 || !ok2 || off <= 0 || on <= 0 || len(waits) == 0 || len(offs.Values) != len(waits) {
			continue
		}
		lanes := float64(transportLanes[kind])
		bounds := make([]float64, len(waits))
		for i, wait := range waits {
			bounds[i] = lanes / (lanes + offs.Values[i]*wait.Seconds())
		}
		ceiling, wait := medianOf(bounds), medianOf(waits)
		laneOff, laneOn := laneTime(lanes, off), laneTime(lanes, on)
		verdict := "out of reach while each message waits for its own round trips"
		if ceiling >= v.Goal {
			verdict = "within reach of the round trips; the rest is the receiver's own cost"
		}
		lines = append(lines, fmt.Sprintf("Bound: transport-%s: a lane (%.0f in all) takes %s per message with the receiver off (%.0f msg/s) "+
			"and %s with it on, of which %s waiting on the Redis store's Claim and Complete, timed around them in the same rounds, "+
			"and %s the receiver's own code and the rest of the round; the waits alone hold receiver on / off to at most %.3f "+
			"(median over %d rounds; measured %.3f, goal %g): %s.",
			kind, lanes, laneOff, off, laneOn, wait.Round(time.Microsecond), (laneOn-laneOff-wait).Round(time.Microsecond),
			ceiling, len(waits), v.Value, v.Goal, verdict))
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
