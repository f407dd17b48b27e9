package admin

import (
	"sync"
	"time"
)

// Counts are outcome counts by handler, then by outcome.
type Counts map[string]map[string]float64

// outcomeWindow turns cumulative counts into counts over the last few
// minutes: it keeps a sample of them each time it is asked (at most one
// per sampleEvery, for at most keepSamples), and answers the difference
// between now and the latest sample at least the window old, or the
// oldest it has, saying from when.
type outcomeWindow struct {
	mu      sync.Mutex
	samples []sample // oldest first
}

type sample struct {
	at     time.Time
	counts Counts
}

const (
	sampleEvery = 10 * time.Second
	keepSamples = 360 // an hour at sampleEvery
)

// over returns the counts since the start of the window ending now, given
// the cumulative counts now, and when that start is: now-window, or later
// when the samples do not go back that far.
func (w *outcomeWindow) over(now time.Time, window time.Duration, counts Counts) (Counts, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.samples); n == 0 || now.Sub(w.samples[n-1].at) >= sampleEvery {
		w.samples = append(w.samples, sample{at: now, counts: counts})
		if len(w.samples) > keepSamples {
			w.samples = w.samples[len(w.samples)-keepSamples:]
		}
	}
	base := w.samples[0]
	for _, s := range w.samples {
		if s.at.After(now.Add(-window)) {
			break
		}
		base = s
	}
	diff := Counts{}
	for handler, byOutcome := range counts {
		diff[handler] = map[string]float64{}
		for outcome, n := range byOutcome {
			diff[handler][outcome] = n - base.counts[handler][outcome]
		}
	}
	return diff, base.at
}
