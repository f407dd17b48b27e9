package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLExecutor runs SQL statements through database/sql: *sql.DB, *sql.Conn
// and *sql.Tx satisfy it.
type SQLExecutor interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ SQLExecutor = (*sql.DB)(nil)
	_ SQLExecutor = (*sql.Conn)(nil)
	_ SQLExecutor = (*sql.Tx)(nil)
)

// SQLQuerier is db as a [Querier], for a Store on database/sql with a
// PostgreSQL driver (pgx's stdlib, lib/pq): New(SQLQuerier(db), cfg), or
// Store.With(SQLQuerier(tx)) to run the store's statements in tx. Such a
// Store runs each call alone (batching needs a *pgxpool.Pool) and only in
// the rows layout (the partitioned one sends batches).
func SQLQuerier(db SQLExecutor) Querier { return sqlQuerier{db} }

type sqlQuerier struct{ db SQLExecutor }

// Exec runs sql; its command tag carries only the rows it affected, which
// is all the store reads of one.
func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	res, err := q.db.ExecContext(ctx, query, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	verb, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	return pgconn.NewCommandTag(strings.ToUpper(verb) + " " + strconv.FormatInt(n, 10)), nil
}

// QueryRow runs sql, its row reporting no row as pgx does.
func (q sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) pgx.Row {
	return sqlRow{q.db.QueryRowContext(ctx, query, args...)}
}

type sqlRow struct{ row *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return pgx.ErrNoRows
	}
	return err
}
