package memory

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

var _ stores.Admin = (*Store)(nil)

// Lookup implements [stores.Admin]. It does not count as a use of a
// completed record: its place in the LRU order stays.
func (s *Store) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	k, err := stores.StorageKey(key)
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, err)
	}
	e, err := s.live(k)
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, err)
	}
	en := stores.Entry{Status: stores.InProgress, Token: e.token, LeaseUntil: e.expiresAt,
		Record: stores.Record{Fingerprint: bytes.Clone(e.fingerprint), CreatedAt: e.createdAt}}
	if e.completed {
		en.Status, en.LeaseUntil = stores.Completed, time.Time{}
		en.Record.Result = bytes.Clone(e.result)
		en.Record.CompletedAt, en.Record.ExpiresAt = e.completedAt, e.expiresAt
	}
	return en, nil
}

// Remove implements [stores.Admin].
func (s *Store) Remove(ctx context.Context, key string, read stores.Entry) error {
	k, err := stores.CheckRemove(key, read)
	if err != nil {
		return fmt.Errorf("removing key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("removing key %q: %w", k, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("removing key %q: %w", k, stores.Unavailable("remove", stores.ErrClosed))
	}
	e, ok := s.entries[k]
	if !ok || e.expired(time.Now()) || e.token != read.Token || e.completed() != (read.Status == stores.Completed) {
		return fmt.Errorf("removing key %q: %w", k, stores.ErrNotFound)
	}
	s.remove(e)
	return nil
}

// snapshot is a copy of an entry's fields, taken under the mutex.
type snapshot struct {
	token                             stores.Token
	fingerprint, result               []byte
	createdAt, completedAt, expiresAt time.Time
	completed                         bool
}

// live returns a snapshot of key's live entry, or [stores.ErrNotFound].
func (s *Store) live(key string) (snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return snapshot{}, stores.Unavailable("lookup", stores.ErrClosed)
	}
	e, ok := s.entries[key]
	if !ok || e.expired(time.Now()) {
		return snapshot{}, stores.ErrNotFound
	}
	// Stored slices are never modified, so they are copied by the caller.
	return snapshot{token: e.token, fingerprint: e.fingerprint, result: e.result, createdAt: e.createdAt,
		completedAt: e.completedAt, expiresAt: e.expiresAt, completed: e.completed()}, nil
}
