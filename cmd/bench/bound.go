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

// pairContender is the contender of each transport comparison that times
// the receiver's Redis cost alone: serial Claim+Complete pairs per second,
// in the same rounds as the receiver on and off, so the bound it gives is
// measured under the same load as the ratio it bounds.
const pairContender = "redis-pairs"

// pairSamples is how many Claim+Complete pairs (and PINGs) one round of the
// pairs contender times.
const pairSamples = 200

// pings keeps, per transport, the median PING of each round of its pairs
// contender; the pairs themselves are the contender's samples.
type pings map[string][]time.Duration

// round returns the pairs contender of transport kind: it times
// pairSamples pairs on env's Redis, keeps the round's PING and returns
// pairs per second.
func (p pings) round(kind string, env *bench.Env) func(context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		b, err := flow.MeasureRedisBound(ctx, env.Redis, pairSamples)
		if err != nil {
			return 0, err
		}
		p[kind] = append(p[kind], b.RTT)
		return b.PerPartition, nil
	}
}

// note states, for each transport whose target was missed, the most its
// ratio can be given the Redis round trips measured in its own rounds: a
// lane handles one message at a time and the receiver adds a Claim and a
// Complete to each, so at off messages/s over lanes the ratio is at most
// lanes / (lanes + off x pair), whatever the receiver's own code costs.
func (p pings) note(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, "transport-")
		if !ok || v.Pass || len(p[kind]) == 0 {
			continue
		}
		res, _ := rep.Result(v.Comparison)
		off, ok1 := res.Median("off")
		pairs, ok2 := res.Median(pairContender)
		if !ok1 || !ok2 || pairs <= 0 {
			continue
		}
		pair := time.Duration(float64(time.Second) / pairs)
		lanes := float64(transportLanes[kind])
		ceiling := lanes / (lanes + off*pair.Seconds())
		verdict := "out of reach while each message waits for its own round trips"
		if ceiling >= v.Goal {
			verdict = "within reach of the round trips; the rest is the receiver's own cost"
		}
		lines = append(lines, fmt.Sprintf("Bound: transport-%s handles %.0f msg/s on %.0f lane(s) with the receiver off; "+
			"a Claim+Complete pair on Redis takes %s in the same rounds (median of %d rounds of %d; PING %s), "+
			"so receiver on / off is at most %.3f (measured %.3f, goal %g): %s.",
			kind, off, lanes, pair.Round(time.Microsecond), len(p[kind]), pairSamples, p.median(kind).Round(time.Microsecond),
			ceiling, v.Value, v.Goal, verdict))
	}
	return lines, nil
}

// median returns the median PING of kind's rounds.
func (p pings) median(kind string) time.Duration {
	d := slices.Sorted(slices.Values(p[kind]))
	return d[len(d)/2]
}
