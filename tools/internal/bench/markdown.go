package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Meta is what the markdown report states besides the measurements.
type Meta struct {
	Command string
	Machine Machine
	// Plots are the paths of the sweeps' plots relative to the report, by
	// sweep name; a sweep without one has none.
	Plots map[string]string
}

// WriteMarkdown writes the report as docs/PERFORMANCE.md: every figure in it
// comes from r.
func (r *Report) WriteMarkdown(w io.Writer, meta Meta) error {
	var b strings.Builder
	m := meta.Machine
	fmt.Fprintf(&b, "# Performance\n\n")
	fmt.Fprintf(&b, "Written by `%s`; do not edit by hand.\n\n", meta.Command)
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| date | %s |\n", r.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "| machine | %s, %d cores, %s |\n", m.CPU, m.Cores, m.OS)
	fmt.Fprintf(&b, "| versions | %s, Redis %s, PostgreSQL %s |\n", m.Go, m.Redis, m.Postgres)
	fmt.Fprintf(&b, "| command | `%s` |\n", meta.Command)
	fmt.Fprintf(&b, "| size | %s: %d interleaved rounds per comparison (%d for %s; a comparison's table shows its rounds), medians; %s per store-call round |\n",
		r.Size, r.Params.Rounds, r.Params.RouterRounds, RouterMemory, r.Params.Window)
	fmt.Fprintf(&b, "| run time | %s |\n\n", r.Elapsed.Round(time.Second))

	fmt.Fprintf(&b, "## Targets\n\nA target that holds one contender against another is judged round by round: its value is the median, over the rounds, "+
		"of the two contenders' ratio (or difference) within each round, so a change in the machine's pace between rounds moves both sides alike. "+
		"It can differ from the ratio of the medians below. "+
		"The last column counts the rounds whose own value meets the goal: a verdict that few rounds share is this machine's noise as much as the code's.\n\n")
	fmt.Fprintf(&b, "| target | measured | goal | verdict | rounds that meet the goal |\n|---|---|---|---|---|\n")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "| %s (%s) | %s | %s%g | %s | %d of %d |\n", v.Name, describe(v.Target), formatValue(v.Value), v.Op, v.Goal, verdictWord(v), v.Met, v.Rounds)
	}

	fmt.Fprintf(&b, "\n## Comparisons\n\nMedians of interleaved rounds; round i starts with contender i mod n.\n")
	for _, res := range r.Results {
		fmt.Fprintf(&b, "\n### %s (%s, %s; took %s)\n\n", res.Name, res.Unit, better(res.LowerIsBetter), res.Took.Round(time.Second))
		if res.Err != nil {
			fmt.Fprintf(&b, "Did not finish: %v\n", res.Err)
			continue
		}
		fmt.Fprintf(&b, "| contender | median | rounds |\n|---|---|---|\n")
		for _, s := range res.Samples {
			vals := make([]string, len(s.Values))
			for i, v := range s.Values {
				vals[i] = figure(v)
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", s.Contender, figure(s.Median), strings.Join(vals, " "))
		}
	}

	fmt.Fprintf(&b, "\n## Sweeps\n")
	for _, s := range r.Sweeps {
		fmt.Fprintf(&b, "\n### %s: %s by %s (took %s)\n\n", s.Name, s.Unit, s.Axis, s.Took.Round(time.Second))
		if s.Err != nil {
			fmt.Fprintf(&b, "Did not finish: %v\n", s.Err)
			continue
		}
		fmt.Fprintf(&b, "| %s |", s.Axis)
		for _, be := range s.Backends {
			fmt.Fprintf(&b, " %s |", be)
		}
		fmt.Fprintf(&b, "\n|---|%s\n", strings.Repeat("---|", len(s.Backends)))
		for i, v := range s.Values {
			fmt.Fprintf(&b, "| %d |", v)
			for _, be := range s.Backends {
				fmt.Fprintf(&b, " %s |", figure(s.Cells[be][i]))
			}
			fmt.Fprintln(&b)
		}
		if f := meta.Plots[s.Name]; f != "" {
			fmt.Fprintf(&b, "\n![%s](%s)\n", s.Plot, f)
		}
	}

	fmt.Fprintf(&b, "\n## Findings\n\n")
	for _, line := range r.FindingLines() {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FindingLines derives the findings from the measurements: missed targets,
// how the sweeps bend, the plan's notes, and the profiles' top functions.
func (r *Report) FindingLines() []string {
	var lines []string
	for _, v := range r.Verdicts {
		if !v.Pass {
			lines = append(lines, fmt.Sprintf("Missed: %s measured %s against %s%g (%s).",
				v.Name, formatValue(v.Value), v.Op, v.Goal, describe(v.Target)))
		}
	}
	for _, s := range r.Sweeps {
		if s.Err != nil || len(s.Values) < 2 {
			continue
		}
		last := len(s.Values) - 1
		for _, be := range s.Backends {
			c := s.Cells[be]
			best := 0
			for i := range c {
				if c[i] > c[best] {
					best = i
				}
			}
			if c[0] <= 0 {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s sweep, %s: %s %s at %s=%d, %.2fx the figure at %s=%d; highest at %s=%d (%s).",
				s.Name, be, figure(c[last]), s.Unit, s.Axis, s.Values[last], c[last]/c[0], s.Axis, s.Values[0],
				s.Axis, s.Values[best], figure(c[best])))
		}
	}
	lines = append(lines, r.Notes...)
	for _, f := range r.Findings {
		lines = append(lines, f.String()+".")
	}
	return lines
}

func describe(t Target) string {
	switch {
	case t.Over == "":
		return fmt.Sprintf("%s: %s", t.Comparison, t.Of)
	case t.Minus:
		return fmt.Sprintf("%s: %s minus %s", t.Comparison, t.Of, t.Over)
	}
	return fmt.Sprintf("%s: %s / %s", t.Comparison, t.Of, t.Over)
}

func verdictWord(v Verdict) string {
	if v.Pass {
		return "PASS"
	}
	return "MISS"
}

func better(lower bool) string {
	if lower {
		return "lower is better"
	}
	return "higher is better"
}
