package cache

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// Claim implements [stores.Store]. A key with a cached completed record is
// answered from the cache without calling the wrapped store; any other
// claim goes to the wrapped store, and a Completed answer is cached. Bad
// arguments and a context already done go straight to the wrapped store,
// which reports them as it always does.
func (s *Store) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	k, err := stores.CheckClaim(key, lease)
	if err != nil || ctx.Err() != nil {
		return s.next.Claim(ctx, key, fingerprint, lease)
	}
	if e, ok := s.lookup(k); ok {
		return e.claim(), nil
	}
	start := s.cfg.Now()
	c, err := s.next.Claim(ctx, key, fingerprint, lease)
	if err != nil {
		return c, err
	}
	switch c.Status {
	case stores.Completed:
		s.remember(k, c.Record, start)
	case stores.Acquired:
		s.acquired.Add(k, acquired{token: c.Token, fingerprint: bytes.Clone(fingerprint), createdAt: start})
	}
	return c, nil
}

// Complete implements [stores.Store]. When the wrapped store accepts it and
// the key was acquired through this Store, the completed record is cached
// until ttl after the call began (local clock), bounded by MaxAge.
// ErrLeaseLost drops the key's cached record.
func (s *Store) Complete(ctx context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	start := s.cfg.Now()
	err := s.next.Complete(ctx, key, token, result, ttl)
	k, kerr := stores.StorageKey(key)
	if kerr != nil {
		return err
	}
	a, mine := s.forget(k, token)
	switch {
	case err == nil && mine:
		s.remember(k, stores.Record{
			Fingerprint: a.fingerprint,
			Result:      result,
			CreatedAt:   a.createdAt,
			CompletedAt: start,
			ExpiresAt:   start.Add(ttl),
		}, start)
	case errors.Is(err, stores.ErrLeaseLost):
		s.invalidate(k)
	}
	return err
}

// Release implements [stores.Store]. It drops the key's cached record
// whatever the wrapped store answers.
func (s *Store) Release(ctx context.Context, key string, token stores.Token) error {
	err := s.next.Release(ctx, key, token)
	s.drop(key, token)
	return err
}

// Extend implements [stores.Store]. ErrLeaseLost drops the key's cached
// record.
func (s *Store) Extend(ctx context.Context, key string, token stores.Token, lease time.Duration) (time.Time, error) {
	until, err := s.next.Extend(ctx, key, token, lease)
	if errors.Is(err, stores.ErrLeaseLost) {
		s.drop(key, token)
	}
	return until, err
}

// drop forgets the acquisition of key remembered for token and drops key's
// cached record; a key that is not valid has neither.
func (s *Store) drop(key string, token stores.Token) {
	if k, err := stores.StorageKey(key); err == nil {
		s.forget(k, token)
		s.invalidate(k)
	}
}

// forget drops the acquisition of key remembered for token, returning it.
func (s *Store) forget(key string, token stores.Token) (acquired, bool) {
	a, ok := s.acquired.Peek(key)
	if !ok || a.token != token {
		return acquired{}, false
	}
	s.acquired.Remove(key)
	return a, true
}
