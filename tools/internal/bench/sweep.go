package bench

import (
	"context"
	"fmt"
	"time"
)

// Sweep measures one quantity per backend along an axis (payload bytes,
// callers). Each cell is the median of Repeats measurements; the backends
// of a cell are measured in turn, so a passing disturbance spreads over
// them rather than one. A backend is a line of the sweep: a store, or any
// other thing measured along the axis.
type Sweep struct {
	Name     string
	Axis     string // what Values are, such as "callers"
	Unit     string // what Measure returns, such as "msg/s"
	Values   []int
	Backends []Backend
	Repeats  int
	Measure  func(b Backend, value int) func(ctx context.Context) (float64, error)
	// Plot is the title of the sweep's plot (see [WritePlot] and
	// [PlotFile]), or empty for none.
	Plot string
}

// SweepResult is a measured Sweep: Cells[backend][i] is the cell of
// Values[i].
type SweepResult struct {
	Name, Axis, Unit string
	// Plot is the sweep's Plot.
	Plot     string
	Values   []int
	Backends []Backend
	Cells    map[Backend][]float64
	Err      error
	// Took is how long the sweep ran.
	Took time.Duration
}

// Run measures every cell of s.
func (s Sweep) Run(ctx context.Context) (SweepResult, error) {
	res := SweepResult{Name: s.Name, Axis: s.Axis, Unit: s.Unit, Plot: s.Plot, Values: s.Values, Backends: s.Backends,
		Cells: map[Backend][]float64{}}
	for _, v := range s.Values {
		samples := map[Backend][]float64{}
		for range max(1, s.Repeats) {
			for _, b := range s.Backends {
				x, err := s.Measure(b, v)(ctx)
				if err != nil {
					res.Err = fmt.Errorf("%s, %s, %s %d: %w", s.Name, b, s.Axis, v, err)
					return res, res.Err
				}
				samples[b] = append(samples[b], x)
			}
		}
		for _, b := range s.Backends {
			res.Cells[b] = append(res.Cells[b], median(samples[b]))
		}
	}
	return res, nil
}
