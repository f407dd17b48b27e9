package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/stores"
)

// Beginner starts a transaction: *pgxpool.Pool and *pgx.Conn begin one,
// and a pgx.Tx begins a savepoint in itself.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Unit is one unit of work: a transaction (or savepoint) with the Store
// bound to it, so that a Claim, the caller's own writes and the Complete
// commit or roll back together. It has the methods of the receiver's
// receiver.Unit, so an application's Transactor can return it. A Unit is
// used by one goroutine.
type Unit struct {
	ctx   context.Context
	tx    pgx.Tx
	store *Store
}

// Begin starts a Unit on db within ctx. Its Context carries the transaction
// (see TxFromContext), for the caller's own writes to join it.
func (s *Store) Begin(ctx context.Context, db Beginner) (*Unit, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, translate(ctx, "begin", err)
	}
	return &Unit{ctx: context.WithValue(ctx, txKey{}, tx), tx: tx, store: s.With(tx)}, nil
}

// Context returns the Begin context carrying the unit's transaction.
func (u *Unit) Context() context.Context { return u.ctx }

// Store returns the Store bound to the unit's transaction.
func (u *Unit) Store() stores.Store { return u.store }

// Commit commits the unit's transaction (releases its savepoint).
func (u *Unit) Commit(ctx context.Context) error { return u.tx.Commit(ctx) }

// Rollback rolls the unit back; after Commit or a previous Rollback it is a
// no-op.
func (u *Unit) Rollback(ctx context.Context) error {
	if err := u.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

type txKey struct{}

// TxFromContext returns the transaction of the Unit whose context ctx is
// (or derives from), if any.
func TxFromContext(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}
