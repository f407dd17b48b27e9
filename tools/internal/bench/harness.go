package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Contender is one side of a [Comparison]. Measure runs once per round and
// returns one measurement in the comparison's unit (an ops/s rate, a
// latency, a count per message). It should do its own set-up and tear-down
// outside the part it times, and leave nothing behind that slows the next
// contender.
type Contender struct {
	Name    string
	Measure func(ctx context.Context) (float64, error)
}

// Comparison is a named set of contenders measured in the same run. Round i
// runs every contender once, starting at contender i mod n and wrapping
// around, so no contender always runs first (on a cold machine) or right
// after the same neighbour. The median of each contender's rounds is
// reported.
type Comparison struct {
	Name string
	// Unit names what Measure returns, such as "msg/s" or "allocs/msg".
	Unit string
	// LowerIsBetter is true for latencies and counts, false for rates.
	LowerIsBetter bool
	Contenders    []Contender
	// Rounds overrides the plan's round count when positive.
	Rounds int
	// Done, when set, runs once the comparison's rounds are over, whatever
	// their outcome: it frees what the contenders keep from one round to
	// the next (a running service, say). Its error fails the run, not the
	// measurements.
	Done func() error
}

// Samples are one contender's measurements, in round order.
type Samples struct {
	Contender string
	Values    []float64
	Median    float64
}

// Result is a measured Comparison.
type Result struct {
	Name          string
	Unit          string
	LowerIsBetter bool
	Samples       []Samples
	// Err is the first error a contender returned; the comparison stopped
	// there and its medians are missing.
	Err error
	// Took is how long the comparison ran, its contenders' setup included.
	Took time.Duration
}

// Median returns the median of contender name, and false when the
// comparison has no such contender or did not finish.
func (r Result) Median(name string) (float64, bool) {
	s, ok := r.Contender(name)
	return s.Median, ok
}

// Paired returns the median, over the rounds, of combine applied to the
// measurements of contenders of and over in the same round, and false when
// the comparison has no such contenders or did not finish. A round runs
// its contenders back to back, so a change in the machine's pace between
// rounds (another tenant, a cooler CPU) moves both sides of a round alike
// and leaves their ratio, where it would move the median of each contender
// by however many of its rounds it touched.
func (r Result) Paired(of, over string, combine func(of, over float64) float64) (float64, bool) {
	per, ok := r.PerRound(of, over, combine)
	return median(per), ok
}

// PerRound returns combine applied to the measurements of contenders of and
// over in each round, in round order: the values Paired takes the median
// of. It returns false when Paired does.
func (r Result) PerRound(of, over string, combine func(of, over float64) float64) ([]float64, bool) {
	sa, ok1 := r.Contender(of)
	sb, ok2 := r.Contender(over)
	a, b := sa.Values, sb.Values
	if !ok1 || !ok2 || len(a) != len(b) || len(a) == 0 {
		return nil, false
	}
	per := make([]float64, len(a))
	for i := range a {
		per[i] = combine(a[i], b[i])
	}
	return per, true
}

// Ratio and Difference are Paired's usual combinations.
func Ratio(of, over float64) float64      { return of / over }
func Difference(of, over float64) float64 { return of - over }

// Contender returns contender name's samples, and false when the
// comparison has no such contender or did not finish.
func (r Result) Contender(name string) (Samples, bool) {
	if r.Err != nil {
		return Samples{}, false
	}
	for _, s := range r.Samples {
		if s.Contender == name {
			return s, true
		}
	}
	return Samples{}, false
}

// Run measures c in rounds interleaved rounds (see [Comparison]). It stops
// at the first error, which it records in Result.Err and returns, then
// runs Done, whose error it returns too.
func (c Comparison) Run(ctx context.Context, rounds int) (res Result, err error) {
	if c.Done != nil {
		defer func() {
			if derr := c.Done(); derr != nil {
				err = errors.Join(err, fmt.Errorf("%s, after its rounds: %w", c.Name, derr))
			}
		}()
	}
	if c.Rounds > 0 {
		rounds = c.Rounds
	}
	res = Result{Name: c.Name, Unit: c.Unit, LowerIsBetter: c.LowerIsBetter, Samples: make([]Samples, len(c.Contenders))}
	for i, ct := range c.Contenders {
		res.Samples[i].Contender = ct.Name
	}
	n := len(c.Contenders)
	for round := range rounds {
		for j := range n {
			k := (round + j) % n
			v, err := c.Contenders[k].Measure(ctx)
			if err != nil {
				res.Err = fmt.Errorf("%s, %s, round %d: %w", c.Name, c.Contenders[k].Name, round+1, err)
				return res, res.Err
			}
			res.Samples[k].Values = append(res.Samples[k].Values, v)
		}
	}
	for i := range res.Samples {
		res.Samples[i].Median = median(res.Samples[i].Values)
	}
	return res, nil
}

// median returns the middle value of vs (the mean of the two middle ones
// for an even count), or 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
