package main

import (
	"context"

	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// roundTimes keeps what each flow round measured besides its rate (see
// flow.RoundTimes), by comparison and contender, in round order: what the
// bounds and fills of the flow targets are made of, measured in the very
// rounds whose ratios they judge. The i-th times of a contender belong to
// its i-th value in the comparison's result.
type roundTimes map[string]map[string][]flow.RoundTimes

// measure returns the Measure of contender of comparison: one round, its
// times kept, its rate returned.
func (r roundTimes) measure(comparison, contender string, round func(context.Context) (flow.RoundTimes, error)) func(context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		t, err := round(ctx)
		if err != nil {
			return 0, err
		}
		r.add(comparison, contender, t)
		return t.Rate, nil
	}
}

// add keeps t as the next round of contender of comparison.
func (r roundTimes) add(comparison, contender string, t flow.RoundTimes) {
	if r[comparison] == nil {
		r[comparison] = map[string][]flow.RoundTimes{}
	}
	r[comparison][contender] = append(r[comparison][contender], t)
}

// of returns the rounds of contender of comparison, in round order.
func (r roundTimes) of(comparison, contender string) []flow.RoundTimes {
	return r[comparison][contender]
}
