// Package migrations holds the versioned SQL schema of onceflow's
// idempotency records and applies it, and a domain's own migrations, with
// goose.
//
// Every file NNNNN_name.sql in this directory is embedded and applied in
// version order; adding a file is all a new migration needs. A domain's
// tables are not here: a domain brings its own files ([Of]), versioned in
// a table of their own, so that the records and the domain migrate
// independently and a fork replaces the domain's without renumbering. Each file has a
// "-- +goose Up" and a "-- +goose Down" section and runs in its own
// transaction.
//
// Version 1, the idempotency records table, comes in two layouts (see
// Layout): 00001_idempotency_records.sql (rows, the default) and
// 00001_idempotency_records_partitioned.sql. A provider reads one of the
// two and never sees the other, so the layout is chosen once, when version 1
// is applied; later runs with another layout change nothing (the store
// checks the table's layout at start-up and refuses a mismatch).
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
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS

// Layout is how the idempotency records table is stored.
type Layout string

// The layouts of the idempotency records table.
const (
	// Rows is one plain table, cleared by deleting expired rows in batches.
	Rows Layout = "rows"
	// Partitioned is a table partitioned by range of created_at, cleared by
	// dropping partitions whose records have all expired.
	Partitioned Layout = "partitioned"
)

// recordsFiles are the version 1 files of each layout.
var recordsFiles = map[Layout]string{
	Rows:        "00001_idempotency_records.sql",
	Partitioned: "00001_idempotency_records_partitioned.sql",
}

// Option configures Up, UpURL, NewProvider and Check.
type Option func(*options)

type options struct {
	layout Layout
	// domain and files, when files is set, are a domain's migrations.
	domain string
	files  fs.FS
}

// WithLayout selects the layout of the idempotency records table, applied
// if version 1 is still pending. Default Rows.
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// Of works on the migrations of the domain name, the NNNNN_name.sql files
// at the root of files, instead of the records': they are versioned in
// DomainVersionTable(name), so their versions are the domain's own.
func Of(name string, files fs.FS) Option {
	return func(o *options) { o.domain, o.files = name, files }
}

// VersionTable is the table, in the current schema, where goose records which
// migrations of the idempotency records were applied.
const VersionTable = "goose_db_version"

// DomainVersionTable is the table, in the current schema, where goose
// records which migrations of the domain name were applied.
func DomainVersionTable(name string) string { return VersionTable + "_" + name }

// Up applies every pending migration to db, in version order, and does
// nothing when the schema is current. Concurrent callers (replicas starting
// together) are serialised by a session advisory lock scoped to the current
// database and schema, so Up is safe to call from every process at start-up.
//
// db must use a PostgreSQL driver; to migrate through an existing pgx pool,
// pass stdlib.OpenDBFromPool(pool).
func Up(ctx context.Context, db *sql.DB, opts ...Option) error {
	p, err := NewProvider(ctx, db, opts...)
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
func UpURL(ctx context.Context, databaseURL string, opts ...Option) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parsing database URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return Up(ctx, db, opts...)
}

// NewProvider returns a goose provider for FS on db, configured as Up uses
// it: version table VersionTable in the current schema, and a session lock
// per database and schema, the files of the layout opts select; or, with
// [Of], the domain's files and version table under the same lock. Use it
// for status, version and down migrations.
func NewProvider(ctx context.Context, db *sql.DB, opts ...Option) (*goose.Provider, error) {
	o := options{layout: Rows}
	for _, opt := range opts {
		opt(&o)
	}
	files, table := fs.FS(FS), VersionTable
	var skip []string
	if o.files != nil {
		files, table = o.files, DomainVersionTable(o.domain)
	} else {
		for l, name := range recordsFiles {
			if l != o.layout {
				skip = append(skip, name)
			}
		}
		if len(skip) == len(recordsFiles) {
			return nil, fmt.Errorf("unknown records layout %q: use %s or %s", o.layout, Rows, Partitioned)
		}
	}
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
	p, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithTableName(table),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
		goose.WithExcludeNames(skip),
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
