package bench

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotFile is the file name of the plot of the sweep named sweep.
func PlotFile(sweep string) string { return "performance-" + sweep + ".png" }

// WritePlot draws r as one line per backend, value on a log2 x axis and
// rate on a log y axis, into a PNG at path.
func WritePlot(r SweepResult, title, path string) error {
	if r.Err != nil {
		return fmt.Errorf("sweep %s did not finish: %w", r.Name, r.Err)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = r.Axis + " (log scale)"
	p.Y.Label.Text = r.Unit + " (log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var lines []any
	for _, b := range r.Backends {
		pts := make(plotter.XYs, 0, len(r.Values))
		for i, v := range r.Values {
			if y := r.Cells[b][i]; y > 0 {
				pts = append(pts, plotter.XY{X: float64(v), Y: y})
			}
		}
		lines = append(lines, string(b), pts)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return fmt.Errorf("plotting %s: %w", r.Name, err)
	}
	p.Legend.Top = true
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return nil
}
