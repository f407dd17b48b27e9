package app

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/transport"
	"github.com/onceflow/onceflow/middleware"
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
	var db postgres.Beginner = t.pool
	if parent, ok := transport.ConsumerTx(ctx); ok {
		db = parent // the unit is a SAVEPOINT in the consumer's transaction
	}
	u, err := t.store.Begin(ctx, db)
	if err != nil {
		return nil, err
	}
	return u, nil
}
