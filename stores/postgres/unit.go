package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/stores"
)

// Beginner starts a transaction: *pgxpool.Pool and *pgx.Conn begin one,
// and a pgx.Tx begins a savepoint in itself.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// SQLBeginner starts a database/sql transaction: *sql.DB and *sql.Conn do.
type SQLBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// Unit is one unit of work: a transaction (or savepoint) with the Store
// bound to it, so that a Claim, the caller's own writes and the Complete
// commit or roll back together. It has the methods of the receiver's
// receiver.Unit, so an application's Transactor can return it. A Unit is
// used by one goroutine.
type Unit struct {
	ctx   context.Context
	tx    ender
	store *Store
}

// ender ends a transaction: a pgx.Tx is one, and sqlTx makes a *sql.Tx
// one.
type ender interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
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

// BeginSQL starts a Unit on a database/sql transaction of db within ctx.
// Its Context carries the transaction (see SQLTxFromContext): the caller's
// writes through it join the unit, whatever the driver (pgx's stdlib,
// lib/pq).
func (s *Store) BeginSQL(ctx context.Context, db SQLBeginner) (*Unit, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, translate(ctx, "begin", err)
	}
	return &Unit{ctx: context.WithValue(ctx, sqlTxKey{}, tx), tx: sqlTx{tx}, store: s.With(SQLQuerier(tx))}, nil
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
	if err := u.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// sqlTx ends a *sql.Tx, which takes no context: the one it began with
// bounds it.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Commit(context.Context) error   { return t.tx.Commit() }
func (t sqlTx) Rollback(context.Context) error { return t.tx.Rollback() }

type (
	txKey    struct{}
	sqlTxKey struct{}
)

// TxFromContext returns the transaction of the Unit whose context ctx is
// (or derives from), if Begin started it.
func TxFromContext(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// SQLTxFromContext returns the transaction of the Unit whose context ctx
// is (or derives from), if BeginSQL started it.
func SQLTxFromContext(ctx context.Context) (*sql.Tx, bool) {
	tx, ok := ctx.Value(sqlTxKey{}).(*sql.Tx)
	return tx, ok
}
