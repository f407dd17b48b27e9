package storetest

import "sync"

// BatchSizes records what a batching store's BatchObserver is told: the
// calls of each batch it sends, by op. It is safe for concurrent use; the
// zero value is ready.
type BatchSizes struct {
	mu     sync.Mutex
	counts map[string][2]int // op: batches, calls
}

// Observe is a BatchObserver: batch of calls sent under op.
func (b *BatchSizes) Observe(op string, calls int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.counts == nil {
		b.counts = map[string][2]int{}
	}
	c := b.counts[op]
	b.counts[op] = [2]int{c[0] + 1, c[1] + calls}
}

// Of returns how many batches op sent and how many calls they carried.
func (b *BatchSizes) Of(op string) (batches, calls int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counts[op]
	return c[0], c[1]
}
