package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/bench"
)

// The bound of a missed transport target pairs each round's receiver-off
// rate with the store wait of the same round's receiver-on round, and takes
// the median over the rounds; another transport's waits play no part.
func TestStoreWaitBoundPairsItsOwnRounds(t *testing.T) {
	waits := storeWaits{
		"amqp": {100 * time.Microsecond, 900 * time.Microsecond, 200 * time.Microsecond},
		"sql":  {time.Millisecond},
	}
	rep := &bench.Report{
		Results: []bench.Result{{Name: "transport-amqp", Samples: []bench.Samples{
			{Contender: "off", Values: []float64{4000, 500, 2000}, Median: 2000},
			{Contender: "on", Values: []float64{1000, 400, 1250}, Median: 1000},
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
	// Rounds: 1/(1 + 4000 x 0.0001) = 0.714, 1/(1 + 500 x 0.0009) = 0.690,
	// 1/(1 + 2000 x 0.0002) = 0.714; the median is 0.714. A lane takes 500µs
	// off and 1ms on, of which the median wait, 200µs, leaves 300µs.
	for _, want := range []string{"takes 500µs per message with the receiver off", "and 1ms with it on",
		"of which 200µs waiting", "and 300µs the receiver's own code", "at most 0.714", "median over 3 rounds", "out of reach"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("bound %q lacks %q", lines[0], want)
		}
	}

	// A met target, or one whose waits were not kept, gets no line.
	rep.Verdicts[0].Pass = true
	if lines, _ := waits.note(context.Background(), rep); len(lines) != 0 {
		t.Errorf("a met target got %q", lines)
	}
	rep.Verdicts[0].Pass = false
	if lines, _ := (storeWaits{}).note(context.Background(), rep); len(lines) != 0 {
		t.Errorf("a target without waits got %q", lines)
	}
}
