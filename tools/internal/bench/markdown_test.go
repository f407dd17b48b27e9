package bench

import (
	"strings"
	"testing"
	"time"
)

// The report states, per target, how many rounds met the goal on their own,
// and, per comparison and sweep, how long it ran: where make bench's
// minutes go.
func TestMarkdownShowsRoundsMetAndTimeTaken(t *testing.T) {
	a, b := []float64{212, 220, 104, 100, 116}, []float64{200, 210, 100, 105, 110}
	res := Result{Name: "c", Unit: "msg/s", Took: 72 * time.Second, Samples: []Samples{
		{Contender: "a", Values: a, Median: median(a)},
		{Contender: "b", Values: b, Median: median(b)},
	}}
	rep := &Report{
		Results:  []Result{res},
		Sweeps:   []SweepResult{{Name: "s", Axis: "callers", Unit: "msg/s", Took: 15 * time.Second}},
		Verdicts: []Verdict{Target{Name: "t", Comparison: "c", Of: "a", Over: "b", Op: AtLeast, Goal: 1.05}.Judge([]Result{res})},
	}
	var out strings.Builder
	if err := rep.WriteMarkdown(&out, Meta{Command: "make bench"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| t (c: a / b) | 1.048 | >=1.05 | MISS | 2 of 5 |",
		"### c (msg/s, higher is better; took 1m12s)",
		"### s: msg/s by callers (took 15s)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
