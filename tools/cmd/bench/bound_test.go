package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// The bounds of a missed transport target pair each round's receiver-off
// rate with the same round's receiver-on rate, store wait and receiver time
// and take the median over the rounds; another transport's rounds play no
// part.
func TestReceiverBoundPairsItsOwnRounds(t *testing.T) {
	offs := []float64{4000, 500, 2000} // a lane takes 250µs, 2ms and 500µs off (median 500µs)
	waits := []time.Duration{100 * time.Microsecond, 900 * time.Microsecond, 200 * time.Microsecond}
	const us = time.Microsecond
	for _, c := range []struct {
		name  string
		waits []time.Duration
		own   time.Duration
		ons   []float64
		want  []string
	}{{
		// On: 1ms, 2.5ms and 800µs a lane; less 10µs of the receiver's own,
		// 250/990 = 0.253, 2000/2490 = 0.803 and 500/790 = 0.633. Any one
		// wait passes 2.5, 2.2 and 2.5 lanes' worth of messages off, capped
		// at 1. At the medians, 500µs off + 200µs + 10µs is 290µs short of
		// the 1ms on.
		name: "turns", waits: waits, own: 10 * us, ons: []float64{1000, 400, 1250},
		want: []string{"takes 500µs per message with the receiver off", "and 1ms with it on: 200µs waiting",
			"and 10µs in the receiver besides", "and 290µs more besides: the transport did none of its work",
			"to at most 1.000 should the transport do all its work", "to at most 0.633 (medians over 3 rounds",
			"out of reach at the pace the transport kept"},
	}, {
		// On at 1500 msg/s: 667µs a lane, 53µs less than 500µs off + 200µs
		// + 20µs: the transport worked while its lanes waited, but not
		// enough: 250/647, 2000/647 (capped at 1) and 500/647 = 0.773.
		name: "worked ahead a little", waits: waits, own: 20 * us, ons: []float64{1500, 1500, 1500},
		want: []string{"so the transport did 53µs of its own work while its lanes waited", "to at most 0.773 (",
			"out of reach at the pace the transport kept"},
	}, {
		// 1ms waits at 2000 msg/s off: a lane passes at most 1/2 as many.
		name: "overlapped", waits: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond},
		ons:  []float64{400, 400, 400},
		want: []string{"to at most 0.500 should the transport do all its work", "to at most 0.200 (", "out of reach: even with all"},
	}, {
		// 200µs of the receiver's own: 250/467, and 1 twice.
		name: "within reach", waits: waits, own: 200 * us, ons: []float64{1500, 1500, 1500},
		want: []string{"so the transport did 233µs of its own work", "to at most 1.000 (", "within reach of the waits"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			times := roundTimes{}
			times.add("transport-sql", receiverOn, flow.RoundTimes{StoreWait: time.Hour, Lanes: 1})
			for i, w := range c.waits {
				times.add("transport-amqp", receiverOn, flow.RoundTimes{Rate: c.ons[i], StoreWait: w, Own: c.own, Lanes: 1})
			}
			rep := &bench.Report{
				Results: []bench.Result{{Name: "transport-amqp", Samples: []bench.Samples{
					{Contender: "off", Values: offs, Median: 2000},
					{Contender: "on", Values: c.ons, Median: medianOf(c.ons)},
				}}},
				Verdicts: []bench.Verdict{{Target: bench.Target{Name: "transport-amqp", Comparison: "transport-amqp", Goal: 0.8}, Value: 0.5}},
			}
			lines, err := times.receiverBound(context.Background(), rep)
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) != 1 {
				t.Fatalf("got %d lines, want 1: %q", len(lines), lines)
			}
			for _, want := range c.want {
				if !strings.Contains(lines[0], want) {
					t.Errorf("bound %q lacks %q", lines[0], want)
				}
			}
			rep.Verdicts[0].Pass = true
			if lines, _ := times.receiverBound(context.Background(), rep); len(lines) != 0 {
				t.Errorf("a met target got %q", lines)
			}
		})
	}
	rep := &bench.Report{
		Results:  []bench.Result{{Name: "transport-amqp", Samples: []bench.Samples{{Contender: "off", Values: offs, Median: 2000}}}},
		Verdicts: []bench.Verdict{{Target: bench.Target{Name: "transport-amqp", Comparison: "transport-amqp", Goal: 0.8}}},
	}
	if lines, _ := (roundTimes{}).receiverBound(context.Background(), rep); len(lines) != 0 {
		t.Errorf("a target without receiver rounds got %q", lines)
	}
}
