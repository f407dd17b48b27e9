package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/bench"
)

// The bound of a missed transport target comes from the pairs timed in that
// transport's own rounds (their median), not from another transport's or a
// later measurement.
func TestPairBoundUsesItsOwnRounds(t *testing.T) {
	rtts := pings{
		"amqp": {300 * time.Microsecond, 40 * time.Microsecond, 50 * time.Microsecond},
		"sql":  {time.Millisecond},
	}
	rep := &bench.Report{
		Results: []bench.Result{{Name: "transport-amqp", Samples: []bench.Samples{
			{Contender: "off", Median: 2000},
			{Contender: pairContender, Values: []float64{1111, 10_000, 5000}, Median: 5000}, // pairs of 900, 100 and 200µs
		}}},
		Verdicts: []bench.Verdict{{Target: bench.Target{Name: "transport-amqp", Comparison: "transport-amqp", Goal: 0.8}, Value: 0.5}},
	}
	lines, err := rtts.note(context.Background(), rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1: %q", len(lines), lines)
	}
	// One lane at 2000 msg/s plus a 200µs pair: 1 / (1 + 2000 x 0.0002) = 0.714.
	for _, want := range []string{"takes 200µs in the same rounds", "median of 3 rounds", "PING 50µs", "at most 0.714", "out of reach"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("bound %q lacks %q", lines[0], want)
		}
	}
}
