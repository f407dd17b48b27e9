package bench

import (
	"fmt"
	"math"
	"strconv"
)

// Op is how a target's value is held against its goal.
type Op string

// The two ops.
const (
	AtLeast Op = ">="
	AtMost  Op = "<="
)

// Target judges one comparison. Its value is the median, over the rounds,
// of contender Of's measurement divided by Over's in the same round (see
// [Result.Paired]); with Minus, Of's minus Over's; with Over empty, Of's
// median itself (a count, such as round trips per message).
type Target struct {
	Name       string
	Comparison string
	Of, Over   string
	Minus      bool
	Op         Op
	Goal       float64
}

// Verdict is a judged Target. Value is NaN when the comparison did not
// finish, and the verdict is then a miss.
type Verdict struct {
	Target
	Value float64
	Pass  bool
}

// Line is the verdict as a script reads it:
//
//	TARGET <name> ratio=<measured> goal=<op><goal> PASS|MISS
func (v Verdict) Line() string {
	word := "MISS"
	if v.Pass {
		word = "PASS"
	}
	return fmt.Sprintf("TARGET %s ratio=%s goal=%s%s %s", v.Name, formatValue(v.Value), v.Op,
		strconv.FormatFloat(v.Goal, 'g', -1, 64), word)
}

// Judge computes t's value from results, the plan's measured comparisons.
func (t Target) Judge(results []Result) Verdict {
	v := Verdict{Target: t, Value: math.NaN()}
	var res *Result
	for i := range results {
		if results[i].Name == t.Comparison {
			res = &results[i]
		}
	}
	if res == nil {
		return v
	}
	combine := Ratio
	if t.Minus {
		combine = Difference
	}
	value, ok := res.Median(t.Of)
	if t.Over != "" {
		value, ok = res.Paired(t.Of, t.Over, combine)
	}
	if !ok || math.IsInf(value, 0) {
		return v
	}
	v.Value = value
	switch t.Op {
	case AtLeast:
		v.Pass = v.Value >= t.Goal
	case AtMost:
		v.Pass = v.Value <= t.Goal
	}
	return v
}

func formatValue(x float64) string {
	if math.IsNaN(x) {
		return "NaN"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}
