package exactlyonce

import (
	"context"
	stdsql "database/sql"
	"sync"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5"
)

// ConsumerBeginner returns the [wsql.Beginner] for a watermill-sql
// subscriber on conn (a *pgxpool.Pool, say) whose handlers do their work in
// the transaction that consumes the message: see [ConsumerTx]. Pass it to
// [wsql.NewSubscriber] in place of [wsql.BeginnerFromPgx].
//
// Two things differ from BeginnerFromPgx. The subscriber neither uses nor
// ends a consumer transaction while a unit of work is open in it (see
// [ConsumerTx]). And a query
// error that pgx reports while rows are read (the serialization failure of
// a replica that lost the race for a consumer group's lock, say) comes back
// from Scan: watermill-sql never calls Rows.Err, so it would take the error
// for an empty table and sleep a poll interval, leaving the lock to the
// other replica for good; here it rolls back and backs off as for any error.
func ConsumerBeginner(conn wsql.Conn) wsql.Beginner {
	return consumerDB{wsql.BeginnerFromPgx(conn)}
}

type consumerDB struct{ wsql.Beginner }

func (db consumerDB) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (wsql.Tx, error) {
	tx, err := db.Beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return consumerTx{Tx: tx, guard: &unitGuard{}}, nil
}

// consumerTx is a consumer transaction: its errors reported (see errRows),
// and every statement of its subscriber, its end included, held back while
// a unit of work is open in it (see unitGuard).
type consumerTx struct {
	wsql.Tx
	guard *unitGuard
}

// Commit commits once no unit of work is open in the transaction.
func (tx consumerTx) Commit() error { return tx.guard.finish(tx.Tx.Commit) }

// Rollback rolls back once no unit of work is open in the transaction.
func (tx consumerTx) Rollback() error { return tx.guard.finish(tx.Tx.Rollback) }

// ExecContext runs the subscriber's statement once no unit of work is open
// in the transaction.
func (tx consumerTx) ExecContext(ctx context.Context, query string, args ...any) (wsql.Result, error) {
	var result wsql.Result
	err := tx.guard.finish(func() (err error) {
		result, err = tx.Tx.ExecContext(ctx, query, args...)
		return err
	})
	return result, err
}

// QueryContext runs the subscriber's query once no unit of work is open in
// the transaction.
func (tx consumerTx) QueryContext(ctx context.Context, query string, args ...any) (wsql.Rows, error) {
	var rows wsql.Rows
	err := tx.guard.finish(func() (err error) {
		rows, err = tx.Tx.QueryContext(ctx, query, args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &errRows{Rows: rows}, nil
}

// errRows yields one more row when reading ended in an error, and its Scan
// returns that error.
type errRows struct {
	wsql.Rows
	done bool
	err  error
}

func (r *errRows) Next() bool {
	if r.done {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.done = true
	if e, ok := r.Rows.(interface{ Err() error }); ok {
		r.err = e.Err()
	}
	return r.err != nil
}

func (r *errRows) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Scan(dest...)
}

// ConsumerTx returns the transaction in which a watermill-sql subscriber
// built on [ConsumerBeginner] consumes the message whose context ctx is:
// work done in it commits with the consumed offset. Watermill SQL does not
// roll it back on a nack, so a caller that may fail works in a savepoint of
// it: its Begin. The subscriber runs no statement in the consumer
// transaction, nor ends it, while such a savepoint is open, not even when
// it closes or the message's ack deadline passes (see unitGuard), so the
// caller must commit or roll it back. It reports false for a message
// of any other subscriber.
func ConsumerTx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := wsql.TxFromContext(ctx)
	if !ok {
		return nil, false
	}
	c, ok := tx.(consumerTx)
	if !ok {
		return nil, false
	}
	switch t := c.Tx.(type) {
	case *wsql.PgxTx:
		return guardedTx{Tx: t.Tx, guard: c.guard}, true
	case wsql.PgxTx:
		return guardedTx{Tx: t.Tx, guard: c.guard}, true
	}
	return nil, false
}

// unitGuard keeps watermill-sql from using a consumer transaction while a
// unit of work is open in it. The subscriber stops waiting for a message's
// ack when it closes, or when the message's ack deadline passes, while the
// router may still be running a handler in the transaction (a graceful
// shutdown lets an attempt in flight run to its end, see
// [consume.OutliveClose]; a slow handler outlives the deadline). It then
// records the offsets acked so far and commits at once: those statements
// would run on the connection concurrently with the handler's (pgx
// connections are not safe for that), and the commit could take the
// handler's half-done work with it. The guard makes every statement of the
// subscriber wait until the unit has ended, committed or rolled back; the
// handler's timeout bounds that wait. The message not acked is delivered
// again, and finds the unit's record if the unit committed.
type unitGuard struct{ mu sync.Mutex }

// finish runs use, a statement of the subscriber or the consumer
// transaction's Commit or Rollback, once no unit is open.
func (g *unitGuard) finish(use func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return use()
}

// guardedTx is the consumer transaction as ConsumerTx hands it out: Begin
// opens a unit (a savepoint) that holds the guard until it ends.
type guardedTx struct {
	pgx.Tx
	guard *unitGuard
}

// Begin opens a savepoint of the consumer transaction; the transaction
// cannot finish until the savepoint is committed or rolled back.
func (t guardedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	t.guard.mu.Lock()
	tx, err := t.Tx.Begin(ctx)
	if err != nil {
		t.guard.mu.Unlock()
		return nil, err
	}
	return &unitTx{Tx: tx, release: sync.OnceFunc(t.guard.mu.Unlock)}, nil
}

// unitTx is a savepoint of a consumer transaction that releases the guard
// when it ends.
type unitTx struct {
	pgx.Tx
	release func()
}

// Commit releases the savepoint, then the guard.
func (u *unitTx) Commit(ctx context.Context) error {
	defer u.release()
	return u.Tx.Commit(ctx)
}

// Rollback rolls back to the savepoint, then releases the guard.
func (u *unitTx) Rollback(ctx context.Context) error {
	defer u.release()
	return u.Tx.Rollback(ctx)
}
