package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// receiverFloor is the contender of a transport comparison that runs the
// Redis floor (see bench.RedisFloorMiddleware) where the receiver runs:
// what guarding a message with the Redis store must cost at least.
const receiverFloor = "floor"

// floorTargetPrefix, followed by the kind, names the target of the CPU
// per message the receiver adds to the transport, over what the floor
// adds.
const floorTargetPrefix = "receiver-cpu-vs-floor-"

// floorGoal is how many times the floor's added CPU the receiver may add.
const floorGoal = 2

// floorTarget is the target of comparison's rounds: the receiver's added
// CPU over the floor's (see addedOverFloor), at most floorGoal.
func (r roundTimes) floorTarget(kind, comparison string) bench.Target {
	return bench.Target{Name: floorTargetPrefix + kind, Of: "CPU/msg on minus off", Over: "floor minus off",
		Op: bench.AtMost, Goal: floorGoal, Rounds: func() []float64 { return r.addedOverFloor(comparison) }}
}

// addedOverFloor is, round by round, the machine's CPU per message that the
// receiver added to the transport over what the floor added, each beside
// the same round's off: (on − off) / (floor − off). A round whose floor
// added nothing measurable is left out.
func (r roundTimes) addedOverFloor(comparison string) []float64 {
	offs, ons, floors := r.of(comparison, receiverOff), r.of(comparison, receiverOn), r.of(comparison, receiverFloor)
	var per []float64
	for i := range min(len(offs), len(ons), len(floors)) {
		off, on, floor := machinePerMessage(offs[i]), machinePerMessage(ons[i]), machinePerMessage(floors[i])
		if off > 0 && on > 0 && floor > off {
			per = append(per, float64(on-off)/float64(floor-off))
		}
	}
	return per
}

// machinePerMessage is the machine's CPU per message a round delivered,
// 0 when it read none.
func machinePerMessage(t flow.RoundTimes) time.Duration {
	if t.Delivered == 0 {
		return 0
	}
	return t.CPU.Machine / time.Duration(t.Delivered)
}

// floorNote states, for every transport, the CPU per message the receiver
// and the floor added, summed over the rounds, and where each went: this
// process's receiver and store client, and the Redis server.
func (r roundTimes) floorNote(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, floorTargetPrefix)
		if !ok {
			continue
		}
		off, ok1 := cpuPerMessage(r.of(v.Comparison, receiverOff))
		on, ok2 := cpuPerMessage(r.of(v.Comparison, receiverOn))
		floor, ok3 := cpuPerMessage(r.of(v.Comparison, receiverFloor))
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		added := func(u bench.CPUUse) string {
			return fmt.Sprintf("%s (receiver %s, store client %s, %s %s)", micros(u.Machine-off.Machine), micros(u.Self.Receiver),
				micros(u.Self.Store), flow.StoreServer, micros(u.Peers[flow.StoreServer]-off.Peers[flow.StoreServer]))
		}
		lines = append(lines, fmt.Sprintf("Floor: %s: per message, summed over the rounds, the transport alone took %s of the machine's CPU; "+
			"the receiver on the Redis store added %s, the floor (the store's claim command and a SET … XX PX, pipelined through go-redis) %s; "+
			"round by round the receiver added %.2f x the floor (goal ≤ %g).",
			kind, micros(off.Machine), added(on), added(floor), v.Value, v.Goal))
	}
	return lines, nil
}
