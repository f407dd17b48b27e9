package bench

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotFile is the file name of the plot of the sweep named sweep.
func PlotFile(sweep string) string { return "performance-" + sweep + ".png" }

// WritePlot draws r as one line per backend, value on a log2 x axis and
// rate on a log y axis, into a PNG at path. A backend named "<group>
// <variant>" (such as "kafka on" and "kafka off") draws in its group's
// colour and marker, each variant with a dash pattern of its own, so the
// lines of one group read as a pair. The legend sits above the lines,
// in room the y axis leaves for it.
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
	var groups, variants []string
	for _, b := range r.Backends {
		group, variant := splitLine(b)
		if !contains(groups, group) {
			groups = append(groups, group)
		}
		if !contains(variants, variant) {
			variants = append(variants, variant)
		}
		pts := make(plotter.XYs, 0, len(r.Values))
		for i, v := range r.Values {
			if y := r.Cells[b][i]; y > 0 {
				pts = append(pts, plotter.XY{X: float64(v), Y: y})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", r.Name, err)
		}
		g, d := index(groups, group), index(variants, variant)
		l.Color, l.Dashes = plotutil.Color(g), plotutil.Dashes(d)
		s.Color, s.Shape = plotutil.Color(g), plotutil.Shape(g)
		p.Add(l, s)
		p.Legend.Add(string(b), l, s)
	}
	p.Legend.Top = true
	height := 5*vg.Inch + vg.Length(max(0, len(r.Backends)-4))*0.25*vg.Inch
	if p.Y.Min > 0 && p.Y.Max > p.Y.Min {
		// The legend's rows take about 14 points each from the top.
		legend := math.Min(0.6, float64(len(r.Backends))*14/height.Points())
		span := math.Log(p.Y.Max / p.Y.Min)
		p.Y.Max *= math.Exp(span * legend / (1 - legend))
	}
	if err := p.Save(8*vg.Inch, height, path); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return nil
}

// splitLine is the group and variant of a line named "<group> <variant>";
// a name without a space is a group of its own.
func splitLine(b Backend) (group, variant string) {
	i := strings.LastIndexByte(string(b), ' ')
	if i < 0 {
		return string(b), ""
	}
	return string(b[:i]), string(b[i+1:])
}

func contains(list []string, s string) bool { return index(list, s) >= 0 }

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
