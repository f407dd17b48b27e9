package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// Claim implements stores.Store in one statement (see internal/pgclaim). A nil
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

// claimOne runs pgclaim.SQL for one key, or in the partitioned layout lockSQL
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
