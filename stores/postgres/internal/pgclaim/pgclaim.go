// Package pgclaim holds the statements with which the PostgreSQL store
// (package stores/postgres) claims keys in the rows layout, one at a time or
// a batch at once; the store hands them to tools that drive PostgreSQL
// themselves (see its ClaimSQL). Each is a format with %[1]s for the table,
// quoted as [QuoteTable] quotes it (see [On]).
package pgclaim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SQL claims a key in one statement that returns exactly one row in every
// case: the row as it stands after the statement, and whether our token ($2)
// now owns it. Its parameters: $1 the storage key, $2 the new token (text),
// $3 the fingerprint (bytea) and $4 the lease in microseconds.
//
// A missing key is inserted. An existing key always takes the DO UPDATE
// branch: when its record is live (expires_at > now()) every column keeps its
// value, so the update changes nothing but still locks the row and returns
// it; when the record has expired — a completed record past its TTL, or an
// in-progress record whose lease ended — every column is replaced, which is
// the takeover (new token, fingerprint and created_at).
//
// The alternatives lose rows under concurrency. A DO UPDATE with a WHERE
// returns nothing when the WHERE is false, and a fallback SELECT in the same
// statement reads the statement's snapshot, which does not yet see a row that
// a concurrent transaction committed after the snapshot was taken: with many
// callers racing on one key, some would get no row at all. A retry loop
// around an INSERT and a SELECT fixes that but spends two round trips per
// duplicate, and its SELECT may observe a different state from the one that
// blocked the INSERT. The always-update form lets PostgreSQL's ON CONFLICT
// machinery do the waiting: it locks the latest committed version of the row
// (waiting for an open transaction that holds it, which is how a duplicate of
// an exactly-once transaction waits for its outcome), and retries the insert
// by itself if the row is deleted meanwhile. The cost is a no-op row version
// per duplicate claim, a heap-only update thanks to the table's fillfactor.
//
// Under REPEATABLE READ or SERIALIZABLE, a conflict with a row the caller's
// snapshot cannot see fails with a serialization error (SQLSTATE 40001);
// exactly-once transactions should use READ COMMITTED, the default.
const SQL = `
INSERT INTO %[1]s AS r (key, state, token, fingerprint, created_at, expires_at)
VALUES ($1, 'in_progress', $2, $3, now(), now() + $4::bigint * interval '1 microsecond')` + conflictSQL + `
RETURNING r.token = $2, r.state, r.fingerprint, r.result, r.created_at, r.completed_at, r.expires_at`

// conflictSQL is the ON CONFLICT clause of SQL, shared with the batched
// claim (see BatchSQL).
const conflictSQL = `
ON CONFLICT (key) DO UPDATE SET
	state        = CASE WHEN r.expires_at > now() THEN r.state        ELSE excluded.state       END,
	token        = CASE WHEN r.expires_at > now() THEN r.token        ELSE excluded.token       END,
	fingerprint  = CASE WHEN r.expires_at > now() THEN r.fingerprint  ELSE excluded.fingerprint END,
	result       = CASE WHEN r.expires_at > now() THEN r.result       ELSE NULL                 END,
	created_at   = CASE WHEN r.expires_at > now() THEN r.created_at   ELSE excluded.created_at  END,
	completed_at = CASE WHEN r.expires_at > now() THEN r.completed_at ELSE NULL                 END,
	expires_at   = CASE WHEN r.expires_at > now() THEN r.expires_at   ELSE excluded.expires_at  END`

// BatchSQL claims many distinct keys in one statement: SQL over arrays, $1
// the storage keys (text[], distinct), $2 their new tokens (text[]), $3
// their fingerprints (bytea[]) and $4 their leases in microseconds
// (bigint[]). The rows are inserted, and so locked, in the byte order of
// their keys (the key column's collation is "C"), so two batches that share
// keys lock them in the same order and cannot deadlock. It returns the row
// of every key, as it stands after the statement, with its token: a key was
// acquired when the token is the one offered.
const BatchSQL = `
INSERT INTO %[1]s AS r (key, state, token, fingerprint, created_at, expires_at)
SELECT u.key, 'in_progress', u.token, u.fingerprint, now(), now() + u.lease * interval '1 microsecond'
FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[]) AS u(key, token, fingerprint, lease)
ORDER BY u.key COLLATE "C"` + conflictSQL + `
RETURNING r.key, r.token, r.state, r.fingerprint, r.result, r.created_at, r.completed_at, r.expires_at`

// On returns sql, SQL or BatchSQL, on table ("name" or "schema.name").
func On(sql, table string) (string, error) {
	quoted, err := QuoteTable(table)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(sql, quoted), nil
}

// QuoteTable quotes table, "name" or "schema.name", as an identifier.
func QuoteTable(table string) (string, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 || slices.Contains(parts, "") {
		return "", fmt.Errorf("invalid table name %q: want name or schema.name", table)
	}
	return pgx.Identifier(parts).Sanitize(), nil
}
