package transport

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// unitGuard keeps watermill-sql from finishing a consumer transaction
// while a unit of work is open in it. When its subscriber closes, it
// commits the transaction at once, with the offsets acked so far, while the
// router may still be running a handler in it (a graceful shutdown lets an
// attempt in flight run to its end): the commit would run on the
// connection concurrently with the handler's statements (pgx connections
// are not safe for that) and could commit its half-done work. The guard
// makes the commit wait until the unit has ended, committed or rolled back;
// HANDLER_TIMEOUT bounds that wait.
type unitGuard struct{ mu sync.Mutex }

// finish runs end, the consumer transaction's Commit or Rollback, once no
// unit is open.
func (g *unitGuard) finish(end func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return end()
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
