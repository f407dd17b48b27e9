package app

import (
	"context"
	"errors"
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// pgTransactor is the middleware.Transactor of DEDUP_MODE=transaction: a
// unit of work is a pgx transaction on the pool, or, when the context
// carries the transaction in which the sql transport's subscriber consumes
// the message, a savepoint in it. Watermill SQL does not roll back its
// transaction on a nack, so each attempt gets its own savepoint: a failed
// attempt rolls back to it, and only a successful one is kept and committed
// with the consumed offset.
type pgTransactor struct {
	pool  *pgxpool.Pool
	store *postgres.Store
}

var _ middleware.Transactor = pgTransactor{}

// Begin implements middleware.Transactor.
func (t pgTransactor) Begin(ctx context.Context) (middleware.Unit, error) {
	var (
		tx  pgx.Tx
		err error
	)
	if parent, ok := consumerTx(ctx); ok {
		tx, err = parent.Begin(ctx) // SAVEPOINT
	} else {
		tx, err = t.pool.Begin(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", stores.ErrUnavailable, err)
	}
	return &pgUnit{ctx: context.WithValue(ctx, txKey{}, tx), tx: tx, store: t.store.With(tx)}, nil
}

// pgUnit is one pgx transaction (or savepoint) as a middleware.Unit.
type pgUnit struct {
	ctx   context.Context
	tx    pgx.Tx
	store *postgres.Store
}

func (u *pgUnit) Context() context.Context         { return u.ctx }
func (u *pgUnit) Store() stores.Store              { return u.store }
func (u *pgUnit) Commit(ctx context.Context) error { return u.tx.Commit(ctx) }
func (u *pgUnit) Rollback(ctx context.Context) error {
	if err := u.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

type txKey struct{}

// txFromContext returns the transaction of the unit of work that ctx
// carries, if any.
func txFromContext(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// ledgerTx is txFromContext for handlers.WithTxFromContext.
func ledgerTx(ctx context.Context) (handlers.Querier, bool) {
	return txFromContext(ctx)
}

// consumerTx returns the pgx transaction in which the sql transport
// consumes the message whose context ctx is.
func consumerTx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := wsql.TxFromContext(ctx)
	if !ok {
		return nil, false
	}
	if c, ok := tx.(sqlConsumerTx); ok {
		tx = c.Tx
	}
	switch t := tx.(type) {
	case *wsql.PgxTx:
		return t.Tx, true
	case wsql.PgxTx:
		return t.Tx, true
	}
	return nil, false
}
