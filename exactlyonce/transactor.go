package exactlyonce

import (
	"context"
	"errors"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Transactor is the [receiver.Transactor] of transaction mode on
// PostgreSQL (Config.Transactor): a unit of work is a transaction begun on
// DB or, when the context carries the transaction in which a watermill-sql
// subscriber consumes the message ([ConsumerTx]), a SAVEPOINT in it, so
// that the work commits with the consumed offset. Watermill SQL does not
// roll its transaction back on a nack, so each attempt gets its own
// savepoint: a failed attempt rolls back to it, and only a successful one
// is kept and committed with the offset.
//
// The unit's context carries its transaction ([postgres.TxFromContext]):
// the handler's own writes join it, and so does [Outbox].
type Transactor struct {
	// DB begins the units of work outside a consumer transaction;
	// typically the service's *pgxpool.Pool. Required.
	DB postgres.Beginner
	// Store is the records store whose statements the units run in their
	// transaction (see [postgres.Store.Begin]); its batching never applies
	// there. Required. When the same store is the receiver's Config.Store,
	// make it with BatchSize postgres.Unbatched: outside the units a batch
	// would wait as a whole on a row that an open unit holds.
	Store *postgres.Store
}

var _ receiver.Transactor = Transactor{}

// Begin implements [receiver.Transactor].
func (t Transactor) Begin(ctx context.Context) (receiver.Unit, error) {
	if t.DB == nil || t.Store == nil {
		return nil, errors.New("exactlyonce.Transactor needs a DB and a Store")
	}
	db := t.DB
	if parent, ok := ConsumerTx(ctx); ok {
		db = parent // the unit is a SAVEPOINT in the consumer's transaction
	}
	u, err := t.Store.Begin(ctx, db)
	if err != nil {
		return nil, err
	}
	return u, nil
}
