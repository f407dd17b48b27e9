package memory

import (
	"fmt"
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
	// owner is the owner of key (Config.Owner), or nil when the store
	// keeps no shares or key has none; ownerIndex is the entry's place in
	// the owner's heap.
	owner      *owner
	ownerIndex int
	// size is what the record counts against Config.MaxBytes.
	size int64
}

// entryOverhead is what a record counts against Config.MaxBytes besides
// its key, fingerprint and result: about what the map, the heaps and the
// entry itself take for it.
const entryOverhead = 256

// owner is one owner's share of the store: its records, by expiry, and
// their bytes.
type owner struct {
	name    string
	records expiry
	bytes   int64
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

// add stores e, a new in-progress record of owner o (nil: none).
func (s *Store) add(e *entry, o *owner) {
	e.size = int64(entryOverhead + len(e.key) + len(e.fingerprint))
	s.entries[e.key] = e
	s.leases.add(e)
	s.bytes += e.size
	if o != nil {
		e.owner = o
		o.records.add(e)
		o.bytes += e.size
		s.owners[o.name] = o
	}
}

// owner returns the owner of key, nil when the store keeps no shares or
// key has no owner.
func (s *Store) owner(key string) *owner {
	if s.ownerOf == nil {
		return nil
	}
	name := s.ownerOf(key)
	if name == "" {
		return nil
	}
	if o, ok := s.owners[name]; ok {
		return o
	}
	return &owner{name: name, records: expiry{slot: byOwner}}
}

// changed counts n more bytes of e, and restores the order of its owner's
// heap after its expiresAt changed.
func (s *Store) changed(e *entry, n int64) {
	e.size += n
	s.bytes += n
	if o := e.owner; o != nil {
		o.bytes += n
		o.records.moved(e)
	}
}

func (s *Store) remove(e *entry) {
	s.order(e).remove(e)
	delete(s.entries, e.key)
	s.bytes -= e.size
	if o := e.owner; o != nil {
		o.records.remove(e)
		o.bytes -= e.size
		if o.records.Len() == 0 {
			delete(s.owners, o.name)
		}
	}
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

// makeRoom returns nil when a new record of owner o (nil: none) fits, or
// else a [*stores.FullError]. In a full store, or a full share, it deletes
// expired records (completed records past their TTL, in-progress ones whose
// lease has ended: all read as absent already) until one fits. It never
// deletes a live record.
func (s *Store) makeRoom(now time.Time, o *owner) error {
	for len(s.entries) >= s.maxEntries || s.bytes >= s.maxBytes {
		if e := s.firstExpired(now); e != nil {
			s.remove(e)
			continue
		}
		limit := fmt.Sprintf("%d records", s.maxEntries)
		if s.bytes >= s.maxBytes {
			limit = fmt.Sprintf("%d bytes", s.maxBytes)
		}
		soonest := s.leases.first()
		if r := s.records.first(); soonest == nil || r != nil && r.expiresAt.Before(soonest.expiresAt) {
			soonest = r
		}
		return &stores.FullError{Limit: limit, RoomIn: soonest.expiresAt.Sub(now)}
	}
	if o == nil {
		return nil
	}
	for o.records.Len() >= s.share.records || o.bytes >= s.share.bytes {
		e := o.records.first()
		if !e.expired(now) {
			limit := fmt.Sprintf("%d records", s.share.records)
			if o.bytes >= s.share.bytes {
				limit = fmt.Sprintf("%d bytes", s.share.bytes)
			}
			return &stores.FullError{Limit: limit, Owner: true, RoomIn: e.expiresAt.Sub(now)}
		}
		s.remove(e)
		if o.records.Len() == 0 {
			return nil
		}
	}
	return nil
}
