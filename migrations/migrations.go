// Package migrations holds the versioned SQL schema of onceflow's PostgreSQL
// tables and applies it with goose.
//
// Every file NNNNN_name.sql in this directory is embedded and applied in
// version order; adding a file is all a new migration needs. Each file has a
// "-- +goose Up" and a "-- +goose Down" section and runs in its own
// transaction.
//
// Objects are created unqualified, so they land in the first schema of the
// connection's search_path, and so does goose's version table: one database
// can hold several independent deployments (or tests) in separate schemas.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS

// VersionTable is the table, in the current schema, where goose records which
// migrations were applied.
const VersionTable = "goose_db_version"

// Up applies every pending migration to db, in version order, and does
// nothing when the schema is current. Concurrent callers (replicas starting
// together) are serialised by a session advisory lock scoped to the current
// database and schema, so Up is safe to call from every process at start-up.
//
// db must use a PostgreSQL driver; to migrate through an existing pgx pool,
// pass stdlib.OpenDBFromPool(pool).
func Up(ctx context.Context, db *sql.DB) error {
	p, err := NewProvider(ctx, db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("applying migrations: %w", err)
	}
	return nil
}

// UpURL is Up on a connection opened from databaseURL (a postgres:// URL or
// key=value DSN) and closed before it returns.
func UpURL(ctx context.Context, databaseURL string) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parsing database URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return Up(ctx, db)
}

// NewProvider returns a goose provider for FS on db, configured as Up uses
// it: version table VersionTable in the current schema, and a session lock
// per database and schema. Use it for status, version and down migrations.
func NewProvider(ctx context.Context, db *sql.DB) (*goose.Provider, error) {
	lockID, err := schemaLockID(ctx, db)
	if err != nil {
		return nil, err
	}
	// Wait up to five minutes for another process's migration, polling each
	// second (goose's smallest period).
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("creating migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS,
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return nil, fmt.Errorf("creating migration provider: %w", err)
	}
	return p, nil
}

// schemaLockID derives the advisory lock of the current database and schema,
// so that deployments (and tests) in different schemas never wait on each
// other while replicas of one deployment do.
func schemaLockID(ctx context.Context, db *sql.DB) (int64, error) {
	var database string
	var schema sql.NullString
	err := db.QueryRowContext(ctx, "SELECT current_database(), current_schema()").Scan(&database, &schema)
	if err != nil {
		return 0, fmt.Errorf("reading current schema: %w", err)
	}
	if !schema.Valid {
		return 0, errors.New("reading current schema: no schema of search_path exists")
	}
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "onceflow/migrations\x00%s\x00%s", database, schema.String)
	return int64(h.Sum64()), nil
}
