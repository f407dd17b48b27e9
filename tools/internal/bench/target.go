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
	// Rounds, when set, gives the values to judge, one per round, instead
	// of Of's and Over's measurements: a figure the comparison's rounds
	// read besides what they measure, such as the CPU per message. Of and
	// Over then only name what it divides.
	Rounds func() []float64
}

// Verdict is a judged Target. Value is NaN when the comparison did not
// finish, and the verdict is then a miss.
type Verdict struct {
	Target
	Value float64
	Pass  bool
	// Rounds is how many rounds the value is the median of, and Met how
	// many of them met the goal on their own: how firm the verdict is
	// against this machine's round-to-round noise.
	Rounds, Met int
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
	s, ok := res.Contender(t.Of)
	per := s.Values
	switch {
	case t.Rounds != nil:
		per, ok = t.Rounds(), res.Err == nil
	case t.Over != "":
		per, ok = res.PerRound(t.Of, t.Over, combine)
	}
	value := median(per)
	if !ok || len(per) == 0 || math.IsInf(value, 0) {
		return v
	}
	v.Value, v.Pass, v.Rounds = value, t.meets(value), len(per)
	for _, x := range per {
		if t.meets(x) {
			v.Met++
		}
	}
	return v
}

// meets reports whether x meets t's goal.
func (t Target) meets(x float64) bool {
	switch t.Op {
	case AtLeast:
		return x >= t.Goal
	case AtMost:
		return x <= t.Goal
	}
	return false
}

func formatValue(x float64) string {
	if math.IsNaN(x) {
		return "NaN"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}
