package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/bench"
)

// The bounds of a missed transport target pair each round's receiver-off
// rate with the store wait of the same round's receiver-on round and take
// the median over the rounds; another transport's waits play no part. The
// verdict rests on the bound that overlapping work would leave, unless the
// rounds show the lanes' work and waits taking turns.
func TestStoreWaitBoundPairsItsOwnRounds(t *testing.T) {
	offs := []float64{4000, 500, 2000} // a lane takes 500µs off (median)
	for _, c := range []struct {
		name  string
		waits []time.Duration
		ons   []float64
		want  []string
	}{{
		// Rounds: 1/(1 + 4000 x 0.0001) = 0.714, 1/(1 + 500 x 0.0009) = 0.690
		// and 1/(1 + 2000 x 0.0002) = 0.714 while taking turns; overlapped,
		// 2.5, 2.2 and 2.5, capped at 1. A lane takes 1ms on, of which the
		// median wait, 200µs, leaves 300µs more than off.
		name:  "turns",
		waits: []time.Duration{100 * time.Microsecond, 900 * time.Microsecond, 200 * time.Microsecond},
		ons:   []float64{1000, 400, 1250},
		want: []string{"takes 500µs per message with the receiver off", "and 1ms with it on: 200µs waiting",
			"and 300µs more than with it off besides", "at most 0.714 while", "at most 1.000 should they overlap",
			"medians over 3 rounds", "out of reach while a lane's own work and its waits take turns"},
	}, {
		// 1ms waits at 2000 msg/s: 1/(1 + 2) = 0.333 taking turns, 1/2 overlapped.
		name:  "overlapped",
		waits: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond},
		ons:   []float64{400, 400, 400},
		want:  []string{"at most 0.333 while", "at most 0.500 should they overlap", "out of reach: even with all"},
	}, {
		// On at 1500 msg/s: 667µs a lane, less the 200µs wait, is 33µs
		// under the 500µs off: the transport worked while its lanes waited,
		// so only the overlapped bound, 1, holds.
		name:  "worked ahead",
		waits: []time.Duration{100 * time.Microsecond, 900 * time.Microsecond, 200 * time.Microsecond},
		ons:   []float64{1500, 1500, 1500},
		want:  []string{"33µs less than with it off besides", "within reach of the waits"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			waits := storeWaits{"amqp": c.waits, "sql": {time.Hour}}
			rep := &bench.Report{
				Results: []bench.Result{{Name: "transport-amqp", Samples: []bench.Samples{
					{Contender: "off", Values: offs, Median: 2000},
					{Contender: "on", Values: c.ons, Median: medianOf(c.ons)},
				}}},
				Verdicts: []bench.Verdict{{Target: bench.Target{Name: "transport-amqp", Comparison: "transport-amqp", Goal: 0.8}, Value: 0.5}},
			}
			lines, err := waits.note(context.Background(), rep)
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
			if lines, _ := waits.note(context.Background(), rep); len(lines) != 0 {
				t.Errorf("a met target got %q", lines)
			}
		})
	}
	rep := &bench.Report{
		Results:  []bench.Result{{Name: "transport-amqp", Samples: []bench.Samples{{Contender: "off", Values: offs, Median: 2000}}}},
		Verdicts: []bench.Verdict{{Target: bench.Target{Name: "transport-amqp", Comparison: "transport-amqp", Goal: 0.8}}},
	}
	if lines, _ := (storeWaits{}).note(context.Background(), rep); len(lines) != 0 {
		t.Errorf("a target without waits got %q", lines)
	}
}
