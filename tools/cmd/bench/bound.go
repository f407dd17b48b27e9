package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/tools/internal/bench"
)

// receiverBound states, for each transport whose receiver target
// (transport-<kind>) was missed, where a message's time goes with the
// receiver on and the most its ratio can be given its own rounds. A lane
// holds one message at a time (a round's consumers have Lanes); with
// the receiver on, each message waits w for its Claim and Complete and
// spends own in the receiver besides. In a round in which the transport
// delivers off messages/s over lanes with the receiver off (a lane's time
// per message, lanes/off) and on messages/s with it on:
//
//   - whatever else it does, a lane passes at most one message per w, so
//     the ratio is at most lanes / (off x w): the bound should the
//     transport do all its own work while its lanes wait;
//   - a receiver that cost nothing but its waits would save a lane own per
//     message and no more: the lane's time on, lanes/on, less own, is the
//     transport's work and the waits less what of its work the transport
//     did while its lanes waited, which is the transport's doing, not the
//     receiver's. So the ratio is at most (lanes/off) / (lanes/on - own):
//     the bound at the pace the transport kept in these rounds.
//
// Each bound is the median over the rounds, each round's off beside the
// same round's on, wait and own.
func (r roundTimes) receiverBound(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, receiverTargetPrefix)
		if !ok || v.Pass {
			continue
		}
		res, _ := rep.Result(v.Comparison)
		offs, ok1 := res.Contender(receiverOff)
		ons, ok2 := res.Contender(receiverOn)
		times, off, on := r.of(v.Comparison, receiverOn), offs.Median, ons.Median
		if !ok1 || !ok2 || off <= 0 || on <= 0 || len(times) == 0 || len(offs.Values) != len(times) || len(ons.Values) != len(times) {
			continue
		}
		lanes := float64(times[0].Lanes)
		if lanes < 1 {
			continue
		}
		overlapped, paced := make([]float64, len(times)), make([]float64, len(times))
		waits, owns := make([]time.Duration, len(times)), make([]time.Duration, len(times))
		for i, t := range times {
			waits[i], owns[i] = t.StoreWait, t.Own
			overlapped[i] = min(1, lanes/(offs.Values[i]*t.StoreWait.Seconds()))
			laneOff, laneOn := lanes/offs.Values[i], lanes/ons.Values[i]
			paced[i] = min(1, laneOff/(laneOn-t.Own.Seconds()))
		}
		atOverlap, atPace, wait, own := medianOf(overlapped), medianOf(paced), medianOf(waits), medianOf(owns)
		laneOff, laneOn := laneTime(lanes, off), laneTime(lanes, on)
		hidden := laneOff + wait + own - laneOn
		besides := fmt.Sprintf("so the transport did %s of its own work while its lanes waited", hidden.Round(time.Microsecond))
		if hidden <= 0 {
			besides = fmt.Sprintf("and %s more besides: the transport did none of its work while its lanes waited", (-hidden).Round(time.Microsecond))
		}
		var verdict string
		switch {
		case atOverlap < v.Goal:
			verdict = "out of reach: even with all of the transport's own work done while its lanes wait, a lane passes at most one message per wait"
		case atPace < v.Goal:
			verdict = "out of reach at the pace the transport kept: only a transport that did more of its work while its lanes wait could pass the goal"
		default:
			verdict = "within reach of the waits; the rest is the receiver's own cost"
		}
		lines = append(lines, fmt.Sprintf("Bound: %s%s: a lane (%.0f in all) takes %s per message with the receiver off (%.0f msg/s) "+
			"and %s with it on: %s waiting on the Redis store's Claim and Complete and %s in the receiver besides, timed in the same rounds, %s. "+
			"The waits hold receiver on / off to at most %.3f should the transport do all its work while its lanes wait; "+
			"a receiver that cost nothing but its waits, on the transport as it ran, to at most %.3f "+
			"(medians over %d rounds; measured %.3f, goal %g): %s.",
			receiverTargetPrefix, kind, lanes, laneOff, off, laneOn, wait.Round(time.Microsecond), own.Round(time.Microsecond), besides,
			atOverlap, atPace, len(times), v.Value, v.Goal, verdict))
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
