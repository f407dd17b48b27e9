// Package memory is a [poison.Store] in this process's memory, for
// development and tests: what it parks is gone when the process ends.
package memory

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/onceflow/onceflow/poison"
)

// Store keeps parked messages in memory, within its Limits. It is safe for
// concurrent use.
type Store struct {
	limits poison.Limits
	now    func() time.Time

	mu    sync.Mutex
	next  uint64
	ids   []uint64 // parking order, oldest first: the order of ParkedAt too
	byID  map[uint64]poison.Message
	bytes int64
}

// New returns an empty Store bounded by limits (zero: poison.DefaultLimits)
// that reads the time from now (nil: time.Now).
func New(limits poison.Limits, now func() time.Time) (*Store, error) {
	if limits == (poison.Limits{}) {
		limits = poison.DefaultLimits
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Store{limits: limits, now: now, byID: map[uint64]poison.Message{}}, nil
}

// Park keeps m, or returns poison.ErrFull.
func (s *Store) Park(_ context.Context, m poison.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	size := int64(m.Size())
	if len(s.ids) >= s.limits.MaxMessages || s.bytes+size > s.limits.MaxBytes {
		return "", poison.ErrFull
	}
	s.next++
	m.ID = strconv.FormatUint(s.next, 10)
	m.State, m.SettledBy, m.SettledAt = poison.Parked, "", nil
	s.ids = append(s.ids, s.next)
	s.byID[s.next] = m
	s.bytes += size
	return m.ID, nil
}

// Get returns the message id names.
func (s *Store) Get(_ context.Context, id string) (poison.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	m, ok := s.byID[parseID(id)]
	if !ok {
		return poison.Message{}, poison.ErrNotFound
	}
	return m, nil
}

// List returns a page of the messages f selects, newest first.
func (s *Store) List(_ context.Context, f poison.Filter) ([]poison.Message, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	end := len(s.ids)
	if f.After != "" {
		after := parseID(f.After)
		end, _ = slices.BinarySearch(s.ids, after)
	}
	size := f.PageSize()
	var page []poison.Message
	for i := end - 1; i >= 0; i-- {
		m := s.byID[s.ids[i]]
		if !f.Matches(m) {
			continue
		}
		if len(page) == size {
			return page, page[size-1].ID, nil
		}
		m.Payload = nil
		page = append(page, m)
	}
	return page, "", nil
}

// Settle marks the parked message id as s says.
func (s *Store) Settle(_ context.Context, id string, st poison.Settlement) (poison.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	n := parseID(id)
	m, ok := s.byID[n]
	switch {
	case !ok:
		return poison.Message{}, poison.ErrNotFound
	case m.State != poison.Parked:
		return m, poison.ErrSettled
	}
	at := st.At.UTC()
	m.State, m.SettledBy, m.SettledAt = st.State, st.By, &at
	s.byID[n] = m
	return m, nil
}

// Summary counts the parked messages by handler and class.
func (s *Store) Summary(context.Context) ([]poison.Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	type group struct{ handler, class string }
	byGroup := map[group]*poison.Group{}
	var groups []*poison.Group
	for _, n := range s.ids { // oldest first
		m := s.byID[n]
		if m.State != poison.Parked {
			continue
		}
		k := group{m.Handler, string(m.Class)}
		g := byGroup[k]
		if g == nil {
			g = &poison.Group{Handler: m.Handler, Class: m.Class, Oldest: m.ParkedAt}
			byGroup[k] = g
			groups = append(groups, g)
		}
		g.Count++
		g.Newest = m.ParkedAt
	}
	out := make([]poison.Group, len(groups))
	for i, g := range groups {
		out[i] = *g
	}
	slices.SortFunc(out, func(a, b poison.Group) int {
		return cmp.Or(cmp.Compare(a.Handler, b.Handler), cmp.Compare(a.Class, b.Class))
	})
	return out, nil
}

// expire removes the messages past their retention, which are the oldest.
func (s *Store) expire() {
	cutoff := s.now().Add(-s.limits.Retention)
	n := 0
	for _, id := range s.ids {
		m := s.byID[id]
		if !m.ParkedAt.Before(cutoff) {
			break
		}
		delete(s.byID, id)
		s.bytes -= int64(m.Size())
		n++
	}
	s.ids = slices.Delete(s.ids, 0, n)
}

// parseID is id as a number, 0 (no message) when it is none.
func parseID(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}
