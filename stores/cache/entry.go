package cache

import (
	"time"

	"github.com/onceflow/onceflow/stores"
)

// entry is a cached completed record. Its slices belong to the cache and
// are never modified; callers get copies.
type entry struct {
	record stores.Record
	until  time.Time // served while the local clock is before it
}

// acquired is a claim this process acquired through the cache, remembered
// so that a successful Complete can cache the record it made.
type acquired struct {
	token       stores.Token
	fingerprint []byte // a copy: the caller may reuse its slice
	createdAt   time.Time
}

// claim returns the Completed claim for e with the record's slices copied,
// both into one allocation.
func (e *entry) claim() stores.Claim {
	r := e.record
	fp, res := r.Fingerprint, r.Result
	buf := make([]byte, len(fp)+len(res))
	n := copy(buf, fp)
	copy(buf[n:], res)
	r.Fingerprint, r.Result = buf[:n:n], buf[n:]
	return stores.Claim{Status: stores.Completed, Record: r}
}

// lookup returns key's entry while it may be served, counting a hit or a
// miss. An entry past its time is dropped.
func (s *Store) lookup(key string) (*entry, bool) {
	e, ok := s.records.Get(key)
	if ok && !s.cfg.Now().Before(e.until) {
		s.records.Remove(key)
		ok = false
	}
	if ok {
		s.observe(Hit)
	} else {
		s.observe(Miss)
	}
	return e, ok
}

// remember caches r, a completed record of key read or written at cachedAt,
// until the earlier of its ExpiresAt and cachedAt plus MaxAge. Records with
// a result over MaxResultBytes, or already past that time, are not cached.
func (s *Store) remember(key string, r stores.Record, cachedAt time.Time) {
	if len(r.Result) > s.cfg.MaxResultBytes {
		return
	}
	until := cachedAt.Add(s.cfg.MaxAge)
	if r.ExpiresAt.Before(until) {
		until = r.ExpiresAt
	}
	if !s.cfg.Now().Before(until) {
		return
	}
	e := &entry{record: r, until: until}
	copied := e.claim().Record // the caller keeps its slices
	e.record.Fingerprint, e.record.Result = copied.Fingerprint, copied.Result
	s.records.Add(key, e)
}

// invalidate drops key's entry, counting it if there was one.
func (s *Store) invalidate(key string) {
	if s.records.Remove(key) {
		s.observe(Invalidation)
	}
}
