package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// receiverBound states, for each transport whose receiver target
// (transport-<kind>) was missed, the CPU that bounds it, from the rounds
// whose ratio the target judges. A round that kept a share u of the
// machine's cores busy spent u x cores x its span of CPU time, over its
// messages; every core busy at the same cost per message would pass
// rate / u of them a second. So receiver on / off is at most
// (rate_on / u_on) / rate_off, round by round, each on beside the same
// round's off: the median over the rounds (see coreBound). Where the CPU
// per message goes, off and on, is summed over the rounds (see
// cpuPerMessage).
func (r roundTimes) receiverBound(_ context.Context, rep *bench.Report) ([]string, error) {
	var lines []string
	for _, v := range rep.Verdicts {
		kind, ok := strings.CutPrefix(v.Name, receiverTargetPrefix)
		if !ok || v.Pass {
			continue
		}
		offs, ons := r.of(v.Comparison, receiverOff), r.of(v.Comparison, receiverOn)
		if len(ons) == 0 || len(ons) != len(offs) {
			continue
		}
		c, ok := coreBound(ons, offs)
		if !ok {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Bound: %s: the machine spent %s of CPU per message with the receiver off (%.0f msg/s, its cores %.0f%% busy) "+
			"and %s with it on (%.0f msg/s, %.0f%% busy), medians over %d rounds; %s (measured %.3f, goal %g).",
			v.Name, medianCPU(offs), medianField(offs, rate), 100*medianField(offs, busy), medianCPU(ons), medianField(ons, rate), 100*c.busy,
			len(ons), c, v.Value, v.Goal)
		if split := cpuSplit(kind, offs, ons); split != "" {
			fmt.Fprintf(&b, " Per message, summed over the rounds, off → on: %s.", split)
		}
		verdict := fmt.Sprintf("within reach of the cores, which the receiver-on rounds kept %.0f%% busy", 100*c.busy)
		one, oneOK := oneInFlight(offs, ons)
		switch {
		case c.bound < v.Goal:
			verdict = fmt.Sprintf("out of reach on this machine: at the receiver's CPU cost per message the cores pass at most %.0f msg/s", c.rate)
		case oneOK && one.bound < v.Goal:
			verdict = fmt.Sprintf("out of reach with one message in flight, the most its adapter hands out (see docs/brokers.md): "+
				"each message waits %s on the store's Claim and Complete in series with the transport's own %s, "+
				"so the ratio is at most %.2f, though the cores had room", micros(one.wait), micros(one.own), one.bound)
		}
		fmt.Fprintf(&b, " Verdict: %s.", verdict)
		lines = append(lines, b.String())
	}
	return lines, nil
}

// cores is what the machine's cores allow the rounds of a ratio's
// numerator, at the CPU cost per message they ran at (see coreBound).
type cores struct {
	bound float64 // the most the ratio can be
	rate  float64 // the rate every core busy would pass
	busy  float64 // the share of the cores the rounds kept busy
}

// coreBound is what the cores allow the rounds of (a ratio's numerator)
// over the rounds over, pairing each round with the same round of over:
// a round that kept a share u of the cores busy would, every core busy at
// the same CPU cost per message, pass rate / u, so the ratio is at most
// (rate / u) / over's rate. Each figure is the median over the rounds
// that read the cores; false when none did.
func coreBound(of, over []flow.RoundTimes) (cores, bool) {
	var bound, rate, busy []float64
	for i := range of {
		if u := of[i].Busy; u > 0 && over[i].Rate > 0 {
			bound = append(bound, of[i].Rate/u/over[i].Rate)
			rate = append(rate, of[i].Rate/u)
			busy = append(busy, u)
		}
	}
	if len(bound) == 0 {
		return cores{}, false
	}
	return cores{bound: medianOf(bound), rate: medianOf(rate), busy: medianOf(busy)}, true
}

// serial is what a transport that hands out one message at a time allows
// receiver on / off, whatever the cores: each message waits on the
// store's Claim and Complete in series with the transport's own time per
// message, 1 / off, so on is at most 1 / (1/off + wait) and the ratio at
// most 1 / (1 + off x wait), round by round, each on round's wait beside
// the same round's off.
type serial struct {
	bound     float64
	wait, own time.Duration
}

// oneInFlight is the serial bound of rounds that held one message at a
// time, the median over the rounds; false when they held more.
func oneInFlight(offs, ons []flow.RoundTimes) (serial, bool) {
	var bound []float64
	var wait, own []time.Duration
	for i := range ons {
		if ons[i].Lanes != 1 || offs[i].Rate <= 0 {
			return serial{}, false
		}
		bound = append(bound, 1/(1+offs[i].Rate*ons[i].StoreWait.Seconds()))
		wait = append(wait, ons[i].StoreWait)
		own = append(own, time.Duration(float64(time.Second)/offs[i].Rate))
	}
	if len(bound) == 0 {
		return serial{}, false
	}
	return serial{bound: medianOf(bound), wait: medianOf(wait), own: medianOf(own)}, true
}

// String states the bound.
func (c cores) String() string {
	return fmt.Sprintf("with every core busy at the same CPU cost per message the ratio would be at most %.2f", c.bound)
}

// medianCPU is the median over rounds of the machine's CPU time per
// message.
func medianCPU(rounds []flow.RoundTimes) string {
	var per []time.Duration
	for _, t := range rounds {
		if t.Delivered > 0 {
			per = append(per, t.CPU.Machine/time.Duration(t.Delivered))
		}
	}
	if len(per) == 0 {
		return "an unknown time"
	}
	return micros(medianOf(per))
}

// medianField is the median over rounds of field, NaN where no round
// has it.
func medianField(rounds []flow.RoundTimes, field func(flow.RoundTimes) float64) float64 {
	var vs []float64
	for _, t := range rounds {
		if v := field(t); !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	return medianOf(vs)
}

func rate(t flow.RoundTimes) float64 { return t.Rate }
func busy(t flow.RoundTimes) float64 { return t.Busy }

// cpuSplit says where the CPU per message of kind's rounds went with the
// receiver off and on: this process's by bucket, the record store's
// server's and the broker's, and the rest of the machine's (the kernel's,
// other tenants'); "" when a round was not profiled.
func cpuSplit(kind string, offs, ons []flow.RoundTimes) string {
	off, okOff := cpuPerMessage(offs)
	on, okOn := cpuPerMessage(ons)
	if !okOff || !okOn {
		return ""
	}
	offOn := func(a, b time.Duration) string { return micros(a) + " → " + micros(b) }
	transport := "transport"
	if kind == "kafka" {
		transport = "transport (its in-process broker included)"
	}
	code := fmt.Sprintf("receiver %s and store client %s, none off", micros(on.Self.Receiver), micros(on.Self.Store))
	if off.Self.Receiver > 0 || off.Self.Store > 0 {
		// A whole service runs its other middlewares (and its HTTP face's
		// store) without the receiver too.
		code = fmt.Sprintf("middleware/, the receiver and the other faces, %s; store client %s",
			offOn(off.Self.Receiver, on.Self.Receiver), offOn(off.Self.Store, on.Self.Store))
	}
	parts := []string{fmt.Sprintf("this process %s (%s; %s %s; runtime/GC %s)",
		offOn(off.Self.Total(), on.Self.Total()), code,
		transport, offOn(off.Self.Transport, on.Self.Transport), offOn(off.Self.Runtime, on.Self.Runtime))}
	restOff, restOn := off.Machine-off.Self.Total(), on.Machine-on.Self.Total()
	for _, comm := range slices.Compact([]string{flow.StoreServer, flow.BrokerCommand(kind)}) {
		d, ok := on.Peers[comm]
		if !ok || comm == "" {
			continue
		}
		role := "the broker"
		switch {
		case comm == flow.StoreServer && kind == "redisstream":
			role = "the record store and the streams"
		case comm == flow.StoreServer:
			role = "the record store"
		}
		parts = append(parts, fmt.Sprintf("%s, %s, %s", comm, role, offOn(off.Peers[comm], d)))
		restOff, restOn = restOff-off.Peers[comm], restOn-d
	}
	parts = append(parts, "the rest of the machine (the kernel, other tenants) "+offOn(max(0, restOff), max(0, restOn)))
	return strings.Join(parts, "; ")
}

// cpuPerMessage is the CPU time of rounds, summed, per message they
// delivered, and false when a round was not profiled.
func cpuPerMessage(rounds []flow.RoundTimes) (bench.CPUUse, bool) {
	sum, n := bench.CPUUse{Profiled: true}, 0
	for _, t := range rounds {
		sum, n = sum.Plus(t.CPU), n+t.Delivered
	}
	if !sum.Profiled || n == 0 {
		return bench.CPUUse{}, false
	}
	return sum.Per(n), true
}

// micros prints d in microseconds, to a tenth.
func micros(d time.Duration) string {
	return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
}

// medianOf returns the middle value of v (the upper one of an even count).
func medianOf[T float64 | time.Duration](v []T) T {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
