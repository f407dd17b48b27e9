package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/stores"
)

var _ stores.Admin = (*Store)(nil)

// The admin statements address one row by its key alone, with plain
// statements on the records table, so they serve any layout of it that
// keeps one live row per key.
const (
	lookupSQL = `
SELECT state, token, fingerprint, result, created_at, completed_at, expires_at
FROM %[1]s WHERE key = $1 AND expires_at > now()`

	removeSQL = `DELETE FROM %[1]s WHERE key = $1 AND token = $2 AND state = $3 AND expires_at > now()`
)

// adminStatements are the admin SQL texts of one table.
type adminStatements struct {
	lookup, remove string
}

func newAdminStatements(table string) adminStatements {
	return adminStatements{lookup: fmt.Sprintf(lookupSQL, table), remove: fmt.Sprintf(removeSQL, table)}
}

// Lookup implements [stores.Admin] in one SELECT.
func (s *Store) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	k, err := stores.StorageKey(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", key, err)
	}
	var (
		state, token string
		e            stores.Entry
		completedAt  *time.Time
		expiresAt    time.Time
	)
	err = s.db.QueryRow(ctx, s.sql.admin.lookup, k).Scan(&state, &token, &e.Record.Fingerprint,
		&e.Record.Result, &e.Record.CreatedAt, &completedAt, &expiresAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, stores.ErrNotFound)
	case err != nil:
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, translate(ctx, "lookup", err))
	}
	e.Token = stores.Token(token)
	if state == "completed" && completedAt != nil {
		e.Status, e.Record.CompletedAt, e.Record.ExpiresAt = stores.Completed, *completedAt, expiresAt
	} else {
		e.Status, e.LeaseUntil = stores.InProgress, expiresAt
	}
	return e, nil
}

// Remove implements [stores.Admin] in one DELETE.
func (s *Store) Remove(ctx context.Context, key string, read stores.Entry) error {
	k, err := stores.CheckRemove(key, read)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("removing key %q: %w", key, err)
	}
	tag, err := s.db.Exec(ctx, s.sql.admin.remove, k, string(read.Token), read.Status.String())
	if err != nil {
		return fmt.Errorf("removing key %q: %w", k, translate(ctx, "remove", err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("removing key %q: %w", k, stores.ErrNotFound)
	}
	return nil
}
