package bench

import "sync"

// BatchFill keeps, round by round, how many calls a batching store's claim
// batches carried on average: how full its batches ran against the most
// its callers could put in one. Give its Observe to the store as its
// BatchObserver and call EndRound after each round; it is safe for
// concurrent use within a round.
type BatchFill struct {
	mu      sync.Mutex
	batches int
	calls   int
	rounds  []float64
}

// Observe counts a claim batch of calls; other operations are ignored.
func (f *BatchFill) Observe(op string, calls int) {
	if op != "claim" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	f.calls += calls
}

// EndRound keeps the round's mean claim batch, if it sent any, and starts
// the next round.
func (f *BatchFill) EndRound() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.batches > 0 {
		f.rounds = append(f.rounds, float64(f.calls)/float64(f.batches))
	}
	f.batches, f.calls = 0, 0
}

// Median returns the median over the rounds of the mean claim batch, and
// false before any round sent one or on a nil BatchFill.
func (f *BatchFill) Median() (float64, bool) {
	if f == nil {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rounds) == 0 {
		return 0, false
	}
	return median(f.rounds), true
}
