// Package bench measures onceflow side by side with its references in one
// run: the plan (see [NewPlan]) lists comparisons of contenders, each
// measured in interleaved, rotated rounds and summarised by medians, and the
// targets that judge them: the median, over the rounds, of two contenders'
// ratio within each round (see [Result.Paired]). cmd/bench runs the plan
// and writes docs/PERFORMANCE.md.
//
// Figures are throughputs, latencies or counts measured on the machine the
// run happens on; only their ratios are meant to travel between machines.
package bench
