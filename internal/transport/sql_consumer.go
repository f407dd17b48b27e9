package transport

import (
	"context"
	stdsql "database/sql"
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlConsumerDB is watermill-sql's pgx adapter for subscribers, with query
// errors reported. With pgx an error such as the serialization failure of a
// replica that lost the race for a consumer group's lock arrives while rows
// are read, and the subscriber never calls Rows.Err: it would take the
// error for an empty table and sleep a poll interval, leaving the lock to
// the other replica for good. Here the error comes back from Scan instead,
// so the subscriber rolls back and backs off as for any error (at once for
// a lost race), and logs it.
type sqlConsumerDB struct{ wsql.Beginner }

func (db sqlConsumerDB) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (wsql.Tx, error) {
	tx, err := db.Beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return sqlConsumerTx{Tx: tx, guard: &unitGuard{}}, nil
}

// sqlConsumerTx is a consumer transaction: its errors reported (see
// errRows), and its end held back while a unit of work is open in it (see
// unitGuard).
type sqlConsumerTx struct {
	wsql.Tx
	guard *unitGuard
}

// Commit commits once no unit of work is open in the transaction.
func (tx sqlConsumerTx) Commit() error { return tx.guard.finish(tx.Tx.Commit) }

// Rollback rolls back once no unit of work is open in the transaction.
func (tx sqlConsumerTx) Rollback() error { return tx.guard.finish(tx.Tx.Rollback) }

func (tx sqlConsumerTx) QueryContext(ctx context.Context, query string, args ...any) (wsql.Rows, error) {
	rows, err := tx.Tx.QueryContext(ctx, query, args...)
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

// OpenConsumerPool opens a pool for watermill-sql subscribers on pool's
// settings, capped at 32 connections and opened on demand. A subscriber
// holds its connection for a whole batch (or while it waits for a
// replica's lock, or for a nacked message's resend): on the service's pool
// subscribers would starve the handlers' own queries. The caller closes it
// after the subscribers.
func OpenConsumerPool(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Pool, error) {
	pcfg := pool.Config()
	pcfg.MaxConns, pcfg.MinConns, pcfg.MinIdleConns = sqlConsumerConns, 0, 0
	consumers, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the SQL subscribers' pool: %w", err)
	}
	return consumers, nil
}
