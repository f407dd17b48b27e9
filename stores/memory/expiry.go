package memory

import "container/heap"

// expiry orders entries by expiresAt, soonest first (a [heap.Interface]
// over the entries, which keep their place in it in the field slot
// returns). The store keeps two by an entry's index: the in-progress
// records by the end of their lease, the completed ones by the end of
// their TTL. Apart, each stays cheap to keep in order: the first holds only
// the records in flight, and a record completed with the usual TTL goes to
// the end of the second. Their tops are the only records that may make
// room in a full store, and the janitor takes expired records off them
// without scanning the rest. Each owner's records are in a third, by an
// entry's ownerIndex, whose top makes room within the owner's share. They
// are guarded by the store's mutex.
type expiry struct {
	entries []*entry
	slot    func(*entry) *int
}

// byState is the slot of the leases' and the records' heaps.
func byState(e *entry) *int { return &e.index }

// byOwner is the slot of an owner's heap.
func byOwner(e *entry) *int { return &e.ownerIndex }

// add puts e, which is in no heap of this slot, in order.
func (h *expiry) add(e *entry) { heap.Push(h, e) }

// remove takes e out.
func (h *expiry) remove(e *entry) { heap.Remove(h, *h.slot(e)) }

// moved restores the order after e's expiresAt changed.
func (h *expiry) moved(e *entry) { heap.Fix(h, *h.slot(e)) }

// first returns the entry that expires first, or nil.
func (h *expiry) first() *entry {
	if len(h.entries) == 0 {
		return nil
	}
	return h.entries[0]
}

func (h *expiry) Len() int           { return len(h.entries) }
func (h *expiry) Less(i, j int) bool { return h.entries[i].expiresAt.Before(h.entries[j].expiresAt) }

func (h *expiry) Swap(i, j int) {
	es := h.entries
	es[i], es[j] = es[j], es[i]
	*h.slot(es[i]), *h.slot(es[j]) = i, j
}

// Push implements [heap.Interface]; use add.
func (h *expiry) Push(x any) {
	e := x.(*entry)
	*h.slot(e) = len(h.entries)
	h.entries = append(h.entries, e)
}

// Pop implements [heap.Interface]; use remove.
func (h *expiry) Pop() any {
	old := h.entries
	e := old[len(old)-1]
	old[len(old)-1] = nil
	h.entries = old[:len(old)-1]
	*h.slot(e) = -1
	return e
}
