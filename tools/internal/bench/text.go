package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// writeResult writes a comparison's medians and rounds as a table.
func writeResult(w io.Writer, r Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "contender\tmedian %s\trounds\n", r.Unit)
	for _, s := range r.Samples {
		vals := make([]string, len(s.Values))
		for i, v := range s.Values {
			vals[i] = figure(v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Contender, figure(s.Median), strings.Join(vals, " "))
	}
	_ = tw.Flush()
}

// writeTook writes how long a comparison or sweep ran, to the second.
func writeTook(w io.Writer, took time.Duration) {
	fmt.Fprintf(w, "(%s)\n", took.Round(time.Second))
}

// writeSweep writes a sweep as a table, one row per value.
func writeSweep(w io.Writer, r SweepResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s", r.Axis)
	for _, b := range r.Backends {
		fmt.Fprintf(tw, "\t%s %s", b, r.Unit)
	}
	fmt.Fprintln(tw)
	for i, v := range r.Values {
		fmt.Fprintf(tw, "%d", v)
		for _, b := range r.Backends {
			fmt.Fprintf(tw, "\t%s", figure(r.Cells[b][i]))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

// figure formats a measurement: whole numbers from 100 up, three
// significant digits below.
func figure(x float64) string {
	if x >= 100 || x <= -100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
