package receivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores/postgres"
)

// pgTransactor begins a postgres.Unit per unit of work, as an
// application's Transactor would.
type pgTransactor struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	// failCommit makes every commit roll back and fail instead.
	failCommit bool
}

func (tr pgTransactor) Begin(ctx context.Context) (receiver.Unit, error) {
	u, err := tr.store.Begin(ctx, tr.pool)
	if err != nil {
		return nil, err
	}
	if tr.failCommit {
		return failingCommit{u}, nil
	}
	return u, nil
}

// failingCommit is a unit whose commit fails, as a lost connection would
// make it: everything rolls back.
type failingCommit struct{ *postgres.Unit }

func (u failingCommit) Commit(ctx context.Context) error {
	_ = u.Rollback(ctx)
	return errors.New("commit failed: connection lost")
}

// NewTxReceiver is a receiver in transaction mode on a fresh PostgreSQL
// schema with an effects table, whose commits all fail when failCommit is
// set, and a function that counts the table's rows (see [Effect]).
func NewTxReceiver(t *testing.T, failCommit bool) (*receiver.Receiver, *Recorder, func() int) {
	t.Helper()
	url := testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, url); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (key text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(pool, postgres.Config{Unbatched: true})
	if err != nil {
		t.Fatal(err)
	}
	r, rec := NewReceiver(t, receiver.Config{Store: s, Transactor: pgTransactor{pool: pool, store: s, failCommit: failCommit}})
	count := func() int {
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM effects").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return r, rec, count
}

// Effect writes one row into the effects table of [NewTxReceiver], in the
// unit of work found in ctx.
func Effect(ctx context.Context) error {
	tx, ok := postgres.TxFromContext(ctx)
	if !ok {
		return errors.New("no unit of work in the context")
	}
	_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ('k')")
	return err
}
