package memory

import (
	"time"

	"github.com/onceflow/onceflow/stores"
)

// entry is one record. Its byte slices are never modified after they are
// stored, so readers may copy them after releasing the mutex.
type entry struct {
	key         string
	token       stores.Token // the owner's token while in progress
	fingerprint []byte
	result      []byte
	createdAt   time.Time
	completedAt time.Time
	// expiresAt is the lease end while in progress and the end of the TTL
	// once completed. At and after it the record reads as absent.
	expiresAt time.Time
	// newer and older place a completed entry in Store.lru.
	newer, older *entry
}

// completed reports whether the record is completed; from then on the
// entry is in Store.lru.
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

func (s *Store) remove(e *entry) {
	if e.completed() {
		s.lru.remove(e)
	}
	delete(s.entries, e.key)
}

// makeRoom frees a slot for a new record if the store is full: it evicts the
// least recently used completed record, else an in-progress record whose
// lease has ended. It reports whether there is room.
func (s *Store) makeRoom(now time.Time) bool {
	if len(s.entries) < s.maxEntries {
		return true
	}
	if s.lru.back != nil {
		s.remove(s.lru.back)
		return true
	}
	// No completed records: every entry is in progress. Scanning them is
	// rare, since the store only fills up with in-progress records when far
	// more handlers run at once than MaxEntries allows.
	for _, e := range s.entries {
		if e.expired(now) {
			s.remove(e)
			return true
		}
	}
	return false
}
