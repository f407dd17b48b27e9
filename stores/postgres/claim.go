package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// claimSQL claims a key in one statement that returns exactly one row in
// every case: the row as it stands after the statement, and whether our token
// ($2) now owns it.
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
const claimSQL = `
INSERT INTO %[1]s AS r (key, state, token, fingerprint, created_at, expires_at)
VALUES ($1, 'in_progress', $2, $3, now(), now() + $4::bigint * interval '1 microsecond')` + claimConflictSQL + `
RETURNING r.token = $2, r.state, r.fingerprint, r.result, r.created_at, r.completed_at, r.expires_at`

// claimConflictSQL is the ON CONFLICT clause of claimSQL, shared with the
// batched claim (see claimBatchSQL).
const claimConflictSQL = `
ON CONFLICT (key) DO UPDATE SET
	state        = CASE WHEN r.expires_at > now() THEN r.state        ELSE excluded.state       END,
	token        = CASE WHEN r.expires_at > now() THEN r.token        ELSE excluded.token       END,
	fingerprint  = CASE WHEN r.expires_at > now() THEN r.fingerprint  ELSE excluded.fingerprint END,
	result       = CASE WHEN r.expires_at > now() THEN r.result       ELSE NULL                 END,
	created_at   = CASE WHEN r.expires_at > now() THEN r.created_at   ELSE excluded.created_at  END,
	completed_at = CASE WHEN r.expires_at > now() THEN r.completed_at ELSE NULL                 END,
	expires_at   = CASE WHEN r.expires_at > now() THEN r.expires_at   ELSE excluded.expires_at  END`

// Claim implements stores.Store in one statement (see claimSQL). A nil
// fingerprint is stored, and returned, as an empty one.
func (s *Store) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	k, err := stores.CheckClaim(key, lease)
	if err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", k, err)
	}
	if fingerprint == nil {
		fingerprint = []byte{}
	}
	req := claimReq{key: k, token: stores.NewToken(), fingerprint: fingerprint, lease: stores.Micros(lease)}
	var c stores.Claim
	if s.batch != nil {
		c, err = s.batch.claim.Do(ctx, req)
	} else {
		c, err = s.claimOne(ctx, req)
	}
	if err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", k, err)
	}
	return c, nil
}

// claimReq is one Claim's arguments, checked.
type claimReq struct {
	key         string
	token       stores.Token
	fingerprint []byte
	lease       int64
}

// claimOne runs claimSQL for one key, or in the partitioned layout lockSQL
// and claimPartitionedSQL in one round trip.
func (s *Store) claimOne(ctx context.Context, req claimReq) (stores.Claim, error) {
	if s.partitioned {
		return s.claimOnePartitioned(ctx, req)
	}
	var (
		acquired bool
		row      claimRow
	)
	err := s.db.QueryRow(ctx, s.sql.claim, req.key, string(req.token), req.fingerprint, req.lease).
		Scan(&acquired, &row.state, &row.rec.Fingerprint, &row.rec.Result, &row.rec.CreatedAt, &row.completedAt, &row.expiresAt)
	if err != nil {
		return stores.Claim{}, translate(ctx, "claim", err)
	}
	if acquired {
		row.token = string(req.token)
	}
	return row.claim(req.token), nil
}

func (s *Store) claimOnePartitioned(ctx context.Context, req claimReq) (stores.Claim, error) {
	db, ok := s.db.(batchSender)
	if !ok {
		return stores.Claim{}, errNoBatches
	}
	br, err := s.sendLocked(ctx, db, s.sql.lock, req.key, s.sql.claim, req.key, string(req.token), req.fingerprint, req.lease)
	if errors.Is(err, errIsolation) {
		return stores.Claim{}, err
	}
	if err != nil {
		return stores.Claim{}, translate(ctx, "claim", err)
	}
	var row claimRow
	err = br.QueryRow().Scan(&row.token, &row.state, &row.rec.Fingerprint, &row.rec.Result, &row.rec.CreatedAt, &row.completedAt, &row.expiresAt)
	if err = errors.Join(err, br.Close()); err != nil {
		return stores.Claim{}, translate(ctx, "claim", err)
	}
	return row.claim(req.token), nil
}

// claimRow is the row a claim statement returns.
type claimRow struct {
	token       string // the row's token
	state       string
	rec         stores.Record
	completedAt *time.Time
	expiresAt   time.Time
}

// claim turns the row into the outcome of a claim that offered token.
func (r *claimRow) claim(token stores.Token) stores.Claim {
	switch {
	case r.token == string(token):
		return stores.Claim{Status: stores.Acquired, Token: token, LeaseUntil: r.expiresAt}
	case r.state == "completed":
		if r.completedAt != nil {
			r.rec.CompletedAt = *r.completedAt
		}
		r.rec.ExpiresAt = r.expiresAt
		return stores.Claim{Status: stores.Completed, Record: r.rec}
	default:
		return stores.Claim{
			Status:     stores.InProgress,
			LeaseUntil: r.expiresAt,
			Record:     stores.Record{Fingerprint: r.rec.Fingerprint, CreatedAt: r.rec.CreatedAt},
		}
	}
}
