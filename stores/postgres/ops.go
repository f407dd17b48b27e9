package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/stores"
)

// The token's owner is whoever holds the in-progress record with that token
// and a lease that has not ended. Complete, Release and Extend all require
// exactly that (Complete also accepts the record that token completed with
// the same result), so a token whose lease ended gets stores.ErrLeaseLost
// from each of them, whether or not someone took the key over; its row
// stays until a Claim takes it over or the sweeper deletes it.
const owned = `key = $1 AND token = $2 AND state = 'in_progress' AND expires_at > now()`

// completeSQL completes the owned record. A live record that token
// completed with the same result ($3; NULL and empty compare equal, as in
// Redis) matches too, and is left as it was: completing again succeeds.
const completeSQL = `
UPDATE %[1]s SET
	state        = 'completed',
	result       = CASE WHEN state = 'in_progress' THEN $3 ELSE result END,
	completed_at = CASE WHEN state = 'in_progress' THEN now() ELSE completed_at END,
	expires_at   = CASE WHEN state = 'in_progress' THEN now() + $4::bigint * interval '1 microsecond' ELSE expires_at END
WHERE key = $1 AND token = $2 AND expires_at > now()
	AND (state = 'in_progress' OR coalesce(result, '') = coalesce($3::bytea, ''))`

const releaseSQL = `DELETE FROM %[1]s WHERE ` + owned

const extendSQL = `
UPDATE %[1]s SET expires_at = now() + $3::bigint * interval '1 microsecond'
WHERE ` + owned + `
RETURNING expires_at`

// Complete implements stores.Store in one UPDATE. The record then expires
// ttl after now(). A nil result is stored as NULL and read back as nil.
// Completing again with the same token and result succeeds and changes
// nothing.
func (s *Store) Complete(ctx context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = stores.CheckDuration("ttl", ttl)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("completing key %q: %w", key, err)
	}
	req := completeReq{key: k, token: token, result: result, ttl: stores.Micros(ttl)}
	if s.batch != nil {
		_, err = s.batch.complete.Do(ctx, req)
	} else {
		err = s.completeOne(ctx, req)
	}
	if err != nil {
		return fmt.Errorf("completing key %q: %w", k, err)
	}
	return nil
}

// completeReq is one Complete's arguments, checked.
type completeReq struct {
	key    string
	token  stores.Token
	result []byte
	ttl    int64
}

// completeOne runs completeSQL for one key.
func (s *Store) completeOne(ctx context.Context, req completeReq) error {
	tag, err := s.db.Exec(ctx, s.sql.complete, req.key, string(req.token), req.result, req.ttl)
	if err != nil {
		return translate(ctx, "complete", err)
	}
	if tag.RowsAffected() == 0 {
		return stores.ErrLeaseLost
	}
	return nil
}

// Release implements stores.Store in one DELETE.
func (s *Store) Release(ctx context.Context, key string, token stores.Token) error {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("releasing key %q: %w", key, err)
	}
	tag, err := s.db.Exec(ctx, s.sql.release, k, string(token))
	if err != nil {
		return fmt.Errorf("releasing key %q: %w", k, translate(ctx, "release", err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("releasing key %q: %w", k, stores.ErrLeaseLost)
	}
	return nil
}

// Extend implements stores.Store in one UPDATE: the lease then ends lease
// after now().
func (s *Store) Extend(ctx context.Context, key string, token stores.Token, lease time.Duration) (time.Time, error) {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = stores.CheckDuration("lease", lease)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", key, err)
	}
	var until time.Time
	err = s.db.QueryRow(ctx, s.sql.extend, k, string(token), stores.Micros(lease)).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, stores.ErrLeaseLost)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, translate(ctx, "extend", err))
	}
	return until, nil
}
