package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Report is what a run measured.
type Report struct {
	Size     Size
	Params   Params
	Started  time.Time
	Elapsed  time.Duration
	Results  []Result
	Verdicts []Verdict
	Sweeps   []SweepResult
	Findings []Finding
	// Notes are the lines the plan's notes derived.
	Notes []string
}

// Result returns the result of the comparison named name.
func (r *Report) Result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// Missed returns the verdict of the target named name when it was missed:
// what a note that states a missed target's bound starts from.
func (r *Report) Missed(name string) (Verdict, bool) {
	for _, v := range r.Verdicts {
		if v.Name == name && !v.Pass {
			return v, true
		}
	}
	return Verdict{}, false
}

// Sweep returns the result of the sweep named name.
func (r *Report) Sweep(name string) (SweepResult, bool) {
	for _, s := range r.Sweeps {
		if s.Name == name {
			return s, true
		}
	}
	return SweepResult{}, false
}

// Run measures every comparison, judges every target, runs the sweeps and
// profiles, and writes progress and each table to log as it goes. A failed
// comparison or sweep does not stop the others: its targets are judged
// misses, and the errors are returned together with the report.
func (p *Plan) Run(ctx context.Context, log io.Writer) (*Report, error) {
	rep := &Report{Size: p.Size, Params: p.Params, Started: time.Now()}
	var errs []error
	for _, c := range p.Comparisons {
		fmt.Fprintf(log, "== %s (%d contenders)\n", c.Name, len(c.Contenders))
		start := time.Now()
		res, err := c.Run(ctx, p.Params.Rounds)
		res.Took = time.Since(start)
		rep.Results = append(rep.Results, res)
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(log, "error: %v\n", err)
		}
		if res.Err == nil {
			writeResult(log, res)
			writeTook(log, res.Took)
		}
	}
	for _, s := range p.Sweeps {
		fmt.Fprintf(log, "== sweep %s\n", s.Name)
		start := time.Now()
		res, err := s.Run(ctx)
		res.Took = time.Since(start)
		rep.Sweeps = append(rep.Sweeps, res)
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(log, "error: %v\n", err)
			continue
		}
		writeSweep(log, res)
		writeTook(log, res.Took)
	}
	for _, w := range p.Profiles {
		fmt.Fprintf(log, "== profile %s\n", w.Name)
		fs, err := ProfileWorkload(ctx, w, p.ProfileSpan, 6)
		if err != nil {
			errs = append(errs, fmt.Errorf("profiling %s: %w", w.Name, err))
			fmt.Fprintf(log, "error: %v\n", err)
			continue
		}
		for _, f := range fs {
			fmt.Fprintln(log, f)
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	for _, t := range p.Targets {
		rep.Verdicts = append(rep.Verdicts, t.Judge(rep.Results))
	}
	for _, note := range p.Notes {
		lines, err := note(ctx, rep)
		if err != nil {
			errs = append(errs, fmt.Errorf("note: %w", err))
			continue
		}
		for _, l := range lines {
			fmt.Fprintln(log, l)
		}
		rep.Notes = append(rep.Notes, lines...)
	}
	rep.Elapsed = time.Since(rep.Started)
	return rep, errors.Join(errs...)
}

// WriteTargets writes one TARGET line per verdict.
func (r *Report) WriteTargets(w io.Writer) {
	for _, v := range r.Verdicts {
		fmt.Fprintln(w, v.Line())
	}
}
