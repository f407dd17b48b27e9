package memory

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// Claim implements stores.Store. A Claim that would create a record in a
// full store, or beyond its owner's share, returns a [*stores.FullError]
// (see Config.MaxEntries, MaxBytes and Owner).
func (s *Store) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	k, err := stores.CheckClaim(key, lease)
	if err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", k, err)
	}
	c, err := s.claim(k, bytes.Clone(fingerprint), lease)
	if err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", k, err)
	}
	// Stored slices are never modified, so they are copied without the lock.
	c.Record.Fingerprint = bytes.Clone(c.Record.Fingerprint)
	c.Record.Result = bytes.Clone(c.Record.Result)
	return c, nil
}

// claim is Claim under the mutex. The returned Claim shares the entry's
// slices.
func (s *Store) claim(key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return stores.Claim{}, stores.Unavailable("claim", stores.ErrClosed)
	}
	now := time.Now()
	if e, ok := s.entries[key]; ok {
		if !e.expired(now) {
			return s.held(e), nil
		}
		s.remove(e) // its lease or TTL has ended: take the key over
	}
	o := s.owner(key)
	if err := s.makeRoom(now, o); err != nil {
		return stores.Claim{}, err
	}
	e := &entry{
		key:         key,
		token:       s.tokens.next(),
		fingerprint: fingerprint,
		createdAt:   now,
		expiresAt:   now.Add(lease),
	}
	s.add(e, o)
	return stores.Claim{Status: stores.Acquired, Token: e.token, LeaseUntil: e.expiresAt}, nil
}

// held returns the Claim for a live entry. s.mu must be held.
func (s *Store) held(e *entry) stores.Claim {
	if !e.completed() {
		return stores.Claim{
			Status:     stores.InProgress,
			LeaseUntil: e.expiresAt,
			Record:     stores.Record{Fingerprint: e.fingerprint, CreatedAt: e.createdAt},
		}
	}
	return stores.Claim{
		Status: stores.Completed,
		Record: stores.Record{
			Fingerprint: e.fingerprint,
			Result:      e.result,
			CreatedAt:   e.createdAt,
			CompletedAt: e.completedAt,
			ExpiresAt:   e.expiresAt,
		},
	}
}

// Complete implements stores.Store. Completing again with the same token
// and result succeeds and changes nothing.
func (s *Store) Complete(ctx context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = stores.CheckDuration("ttl", ttl)
	}
	if err != nil {
		return fmt.Errorf("completing key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("completing key %q: %w", k, err)
	}
	result = bytes.Clone(result)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("completing key %q: %w", k, stores.Unavailable("complete", stores.ErrClosed))
	}
	now := time.Now()
	if e, ok := s.entries[k]; ok && e.completed() && e.token == token && !e.expired(now) && bytes.Equal(e.result, result) {
		return nil // completed already, by this token with this result
	}
	e, err := s.owned(k, token, now)
	if err != nil {
		return fmt.Errorf("completing key %q: %w", k, err)
	}
	s.leases.remove(e)
	e.result = result
	e.completedAt = now
	e.expiresAt = now.Add(ttl)
	s.records.add(e)
	s.changed(e, int64(len(result)))
	return nil
}

// Release implements stores.Store.
func (s *Store) Release(ctx context.Context, key string, token stores.Token) error {
	k, err := stores.CheckToken(key, token)
	if err != nil {
		return fmt.Errorf("releasing key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("releasing key %q: %w", k, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("releasing key %q: %w", k, stores.Unavailable("release", stores.ErrClosed))
	}
	e, err := s.owned(k, token, time.Now())
	if err != nil {
		return fmt.Errorf("releasing key %q: %w", k, err)
	}
	s.remove(e)
	return nil
}

// Extend implements stores.Store.
func (s *Store) Extend(ctx context.Context, key string, token stores.Token, lease time.Duration) (time.Time, error) {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = stores.CheckDuration("lease", lease)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, stores.Unavailable("extend", stores.ErrClosed))
	}
	now := time.Now()
	e, err := s.owned(k, token, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, err)
	}
	e.expiresAt = now.Add(lease)
	s.leases.moved(e)
	s.changed(e, 0)
	return e.expiresAt, nil
}
