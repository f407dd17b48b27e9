package memory

// lru orders the completed entries, most recently used first. It links the
// entries themselves, so that completing a record allocates nothing beyond
// the record; container/list would allocate an element for each. It is
// guarded by the store's mutex.
type lru struct {
	front, back *entry
}

// pushFront makes e, which is in no list, the most recently used.
func (l *lru) pushFront(e *entry) {
	e.newer, e.older = nil, l.front
	if l.front != nil {
		l.front.newer = e
	} else {
		l.back = e
	}
	l.front = e
}

// remove takes e out of the list.
func (l *lru) remove(e *entry) {
	if e.newer != nil {
		e.newer.older = e.older
	} else {
		l.front = e.older
	}
	if e.older != nil {
		e.older.newer = e.newer
	} else {
		l.back = e.newer
	}
	e.newer, e.older = nil, nil
}

// moveToFront makes e, which is in the list, the most recently used.
func (l *lru) moveToFront(e *entry) {
	if l.front != e {
		l.remove(e)
		l.pushFront(e)
	}
}
