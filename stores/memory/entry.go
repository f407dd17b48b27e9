package memory

import (
	"time"

	"github.com/onceflow/onceflow/stores"
)

// entry is one record. Its byte slices are never modified after they are
// stored, so readers may copy them after releasing the mutex.
type entry struct {
	key         string
	token       stores.Token // the owner's token, kept once completed
	fingerprint []byte
	result      []byte
	createdAt   time.Time
	completedAt time.Time
	// expiresAt is the lease end while in progress and the end of the TTL
	// once completed. At and after it the record reads as absent.
	expiresAt time.Time
	// index is the entry's place in Store.leases while in progress, in
	// Store.records once completed.
	index int
}

// completed reports whether the record is completed.
func (e *entry) completed() bool { return !e.completedAt.IsZero() }

func (e *entry) expired(now time.Time) bool { return !now.Before(e.expiresAt) }

// The methods below must be called with s.mu held.

// owned returns the in-progress entry for key whose live lease belongs to
// token, or [stores.ErrLeaseLost].
func (s *Store) owned(key string, token stores.Token, now time.Time) (*entry, error) {
	e, ok := s.entries[key]
	if !ok || e.completed() || e.token != token || e.expired(now) {
		return nil, stores.ErrLeaseLost
	}
	return e, nil
}

// order returns the heap e is in.
func (s *Store) order(e *entry) *expiry {
	if e.completed() {
		return &s.records
	}
	return &s.leases
}

// add stores e, a new in-progress record.
func (s *Store) add(e *entry) {
	s.entries[e.key] = e
	s.leases.add(e)
}

func (s *Store) remove(e *entry) {
	s.order(e).remove(e)
	delete(s.entries, e.key)
}

// firstExpired returns a record that has expired by now, or nil.
func (s *Store) firstExpired(now time.Time) *entry {
	for _, e := range [...]*entry{s.leases.first(), s.records.first()} {
		if e != nil && e.expired(now) {
			return e
		}
	}
	return nil
}

// makeRoom reports whether a new record fits. In a full store it deletes an
// expired record if there is one (a completed record past its TTL, or an
// in-progress one whose lease has ended: both read as absent already). It
// never deletes a live record.
func (s *Store) makeRoom(now time.Time) bool {
	if len(s.entries) < s.maxEntries {
		return true
	}
	if e := s.firstExpired(now); e != nil {
		s.remove(e)
		return true
	}
	return false
}
