package memory

import "container/heap"

// expiry orders entries by expiresAt, soonest first (a [heap.Interface]
// over the entries, which keep their index in it). The store keeps two: the
// in-progress records by the end of their lease, the completed ones by the
// end of their TTL. Apart, each stays cheap to keep in order: the first
// holds only the records in flight, and a record completed with the usual
// TTL goes to the end of the second. Their tops are the only records that
// may make room in a full store, and the janitor takes expired records off
// them without scanning the rest. They are guarded by the store's mutex.
type expiry []*entry

// add puts e, which is in no heap, in order.
func (h *expiry) add(e *entry) { heap.Push(h, e) }

// remove takes e out.
func (h *expiry) remove(e *entry) { heap.Remove(h, e.index) }

// moved restores the order after e's expiresAt changed.
func (h *expiry) moved(e *entry) { heap.Fix(h, e.index) }

// first returns the entry that expires first, or nil.
func (h expiry) first() *entry {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

func (h expiry) Len() int           { return len(h) }
func (h expiry) Less(i, j int) bool { return h[i].expiresAt.Before(h[j].expiresAt) }

func (h expiry) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

// Push implements [heap.Interface]; use add.
func (h *expiry) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

// Pop implements [heap.Interface]; use remove.
func (h *expiry) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
