package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/migrations"
)

// DefaultPostgresURL is the database tests use unless TEST_DATABASE_URL is set.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresURL returns TEST_DATABASE_URL or DefaultPostgresURL.
func PostgresURL() string { return Getenv("TEST_DATABASE_URL", DefaultPostgresURL) }

// PostgresSchema creates a fresh schema for t, dropped when t ends, and
// returns a connection URL whose search_path points at it. Tests that run
// migrations into that URL are isolated from each other and from packages
// running in parallel.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	Integration(t)
	base := PostgresURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		Unreachable(t, "PostgreSQL", RedactURL(base), err)
	}
	defer conn.Close(ctx)

	schema := "t_" + strings.ToLower(randomSuffix())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, base, schema)
}

// Postgres returns a pool on a fresh schema (see PostgresSchema), closed when
// t ends.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return openPool(t, PostgresSchema(t))
}

// MigratedPostgres is Postgres with every migration applied to the fresh
// schema, with opts (such as a records layout).
func MigratedPostgres(t testing.TB, opts ...migrations.Option) *pgxpool.Pool {
	t.Helper()
	u := PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, u, opts...); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return openPool(t, u)
}

// openPool opens a pool on u, closed when t ends.
func openPool(t testing.TB, u string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func withSearchPath(t testing.TB, raw, schema string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parsing TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// RedactURL hides the password of a connection URL for messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func randomSuffix() string {
	return fmt.Sprintf("%d_%s", time.Now().UnixNano()%1e9, NewID()[:8])
}

// sqlMaxConns bounds a database/sql pool of a test, as pgxpool's default
// bounds a pgx one: unbounded, a test's burst of concurrent calls would
// take PostgreSQL's whole connection limit from the packages testing
// beside it.
const sqlMaxConns = 4

// MigratedPostgresSQL is MigratedPostgres on database/sql with driver (one
// the test imports, such as pgx's stdlib "pgx" or lib/pq's "postgres"),
// at most sqlMaxConns connections, closed when t ends.
func MigratedPostgresSQL(t testing.TB, driver string) *sql.DB {
	t.Helper()
	u := PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, u); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	db, err := sql.Open(driver, u)
	if err != nil {
		t.Fatalf("opening %s: %v", driver, err)
	}
	db.SetMaxOpenConns(sqlMaxConns)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
