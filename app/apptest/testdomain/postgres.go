package testdomain

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	storepg "github.com/onceflow/onceflow/stores/postgres"
)

// migrationFiles are the .sql files beside this one.
//
//go:embed *.sql
var migrationFiles embed.FS

// Migrations holds the ledger's table, testdomain_ledger: the domain's
// goose migrations, the NNNNN_name.sql files of this package.
func Migrations() fs.FS { return migrationFiles }

// PostgresLedger is a [Ledger] in PostgreSQL, in the table the domain's
// migrations create: replicas on one database share it. A call whose
// context carries a unit of work's transaction ([storepg.TxFromContext]:
// DEDUP_MODE=transaction) runs in it, so that its row commits with the
// run's record, or not at all.
type PostgresLedger struct{ db *pgxpool.Pool }

var _ Ledger = (*PostgresLedger)(nil)

// NewPostgresLedger returns the ledger in db, whose search_path leads to
// the migrated table.
func NewPostgresLedger(db *pgxpool.Pool) *PostgresLedger { return &PostgresLedger{db: db} }

// querier is what the ledger runs its statements on: the pool or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (l *PostgresLedger) conn(ctx context.Context) querier {
	if tx, ok := storepg.TxFromContext(ctx); ok {
		return tx
	}
	return l.db
}

// addSQL adds a row unless one of its effect key is there; a NULL key
// (no run) conflicts with none.
const addSQL = `INSERT INTO testdomain_ledger (kind, id, effect_key) VALUES ($1, $2, $3)
ON CONFLICT (effect_key) DO NOTHING`

// Add implements [Ledger].
func (l *PostgresLedger) Add(ctx context.Context, kind Kind, id string) error {
	var key *string
	if k, ok := rowKey(ctx, kind); ok {
		key = &k
	}
	if _, err := l.conn(ctx).Exec(ctx, addSQL, string(kind), id, key); err != nil {
		return fmt.Errorf("adding a %s row of %q: %w", kind, id, err)
	}
	return nil
}

// Tally implements [Ledger].
func (l *PostgresLedger) Tally(ctx context.Context, prefix string) (Tally, error) {
	return l.tally(ctx, "starts_with(id, $1)", prefix)
}

// TallyOf implements [Ledger].
func (l *PostgresLedger) TallyOf(ctx context.Context, id string) (Tally, error) {
	return l.tally(ctx, "id = $1", id)
}

// tally counts the rows of each kind where the condition on $1, arg,
// holds.
func (l *PostgresLedger) tally(ctx context.Context, where, arg string) (Tally, error) {
	rows, err := l.conn(ctx).Query(ctx,
		`SELECT kind, count(*), count(DISTINCT id) FROM testdomain_ledger WHERE `+where+` GROUP BY kind`, arg)
	if err != nil {
		return Tally{}, fmt.Errorf("counting the ledger: %w", err)
	}
	var t Tally
	var (
		kind string
		c    Counts
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &c.Rows, &c.IDs}, func() error {
		if p := t.of(Kind(kind)); p != nil {
			*p = c
		}
		return nil
	})
	if err != nil {
		return Tally{}, fmt.Errorf("counting the ledger: %w", err)
	}
	return t, nil
}
