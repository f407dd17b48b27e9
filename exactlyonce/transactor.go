package exactlyonce

import (
	"context"
	"database/sql"
	"errors"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Transactor is the [receiver.Transactor] of transaction mode on
// PostgreSQL (Config.Transactor), on pgx or on database/sql.
//
// On pgx (DB), a unit of work is a transaction begun on DB or, when the
// context carries the transaction in which a watermill-sql subscriber
// consumes the message ([ConsumerTx]), a SAVEPOINT in it, so that the work
// commits with the consumed offset. Watermill SQL does not roll its
// transaction back on a nack, so each attempt gets its own savepoint: a
// failed attempt rolls back to it, and only a successful one is kept and
// committed with the offset. The unit's context carries its transaction
// ([postgres.TxFromContext]).
//
// On database/sql (SQL), with any PostgreSQL driver, a unit of work is a
// *sql.Tx begun on SQL, which the unit's context carries
// ([postgres.SQLTxFromContext]). It never joins a consumer's transaction:
// the consumed offset commits on its own, and a message redelivered after
// its unit committed is answered from its record.
//
// The handler's own writes through the unit's transaction join it, and so
// does [Outbox].
type Transactor struct {
	// DB begins the units of work on pgx; typically the service's
	// *pgxpool.Pool. It, or SQL, is required.
	DB postgres.Beginner
	// SQL begins the units of work on database/sql instead of DB.
	SQL *sql.DB
	// Store is the records store whose statements the units run in their
	// transaction (see [postgres.Store.Begin]); its batching never applies
	// there, and the receiver in transaction mode needs no other store.
	// Required.
	Store *postgres.Store
}

var _ receiver.Transactor = Transactor{}

// Begin implements [receiver.Transactor].
func (t Transactor) Begin(ctx context.Context) (receiver.Unit, error) {
	if (t.DB == nil) == (t.SQL == nil) || t.Store == nil {
		return nil, errors.New("exactlyonce.Transactor needs a Store and one of DB and SQL")
	}
	var (
		u   *postgres.Unit
		err error
	)
	switch parent, ok := ConsumerTx(ctx); {
	case t.SQL != nil:
		u, err = t.Store.BeginSQL(ctx, t.SQL)
	case ok:
		u, err = t.Store.Begin(ctx, parent) // a SAVEPOINT in the consumer's transaction
	default:
		u, err = t.Store.Begin(ctx, t.DB)
	}
	if err != nil {
		return nil, err // not a nil *Unit in the interface
	}
	return u, nil
}
