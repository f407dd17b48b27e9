package memory

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

var _ stores.Admin = (*Store)(nil)

// Lookup implements [stores.Admin].
func (s *Store) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	k, err := stores.StorageKey(key)
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, err)
	}
	e, err := s.lookup(k)
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, err)
	}
	// Stored slices are never modified, so they are copied without the lock.
	e.Record.Fingerprint = bytes.Clone(e.Record.Fingerprint)
	e.Record.Result = bytes.Clone(e.Record.Result)
	return e, nil
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

// lookup is Lookup under the mutex. The returned Entry shares the entry's
// slices.
func (s *Store) lookup(key string) (stores.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return stores.Entry{}, stores.Unavailable("lookup", stores.ErrClosed)
	}
	e, ok := s.entries[key]
	if !ok || e.expired(time.Now()) {
		return stores.Entry{}, stores.ErrNotFound
	}
	if !e.completed() {
		return stores.Entry{Status: stores.InProgress, Token: e.token, LeaseUntil: e.expiresAt,
			Record: stores.Record{Fingerprint: e.fingerprint, CreatedAt: e.createdAt}}, nil
	}
	return stores.Entry{Status: stores.Completed, Token: e.token, Record: stores.Record{
		Fingerprint: e.fingerprint, Result: e.result,
		CreatedAt: e.createdAt, CompletedAt: e.completedAt, ExpiresAt: e.expiresAt,
	}}, nil
}
