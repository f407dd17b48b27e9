package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
)

func openDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func assertAllApplied(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	p, err := migrations.NewProvider(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	statuses, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) == 0 {
		t.Fatal("no migrations found")
	}
	for _, s := range statuses {
		if s.State != goose.StateApplied {
			t.Errorf("migration %s: state %s, want applied", s.Source.Path, s.State)
		}
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pending {
		t.Error("HasPending = true after Up")
	}
}

func TestUpIsIdempotent(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	ctx := context.Background()
	for i := range 2 {
		if err := migrations.UpURL(ctx, url); err != nil {
			t.Fatalf("Up #%d: %v", i+1, err)
		}
	}
	db := openDB(t, url)
	assertAllApplied(t, db)

	// The tables and the version table live in the schema of search_path.
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename IN ('idempotency_records', $1)`,
		migrations.VersionTable).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("found %d of idempotency_records and %s in the current schema, want 2", n, migrations.VersionTable)
	}
}

func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var g errgroup.Group
	for range 3 {
		g.Go(func() error { return migrations.UpURL(ctx, url) })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("concurrent Up: %v", err)
	}
	assertAllApplied(t, openDB(t, url))
}

func TestDownThenUp(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	ctx := context.Background()
	db := openDB(t, url)
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	p, err := migrations.NewProvider(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != 0 {
		t.Fatalf("version after down = %d, %v; want 0", v, err)
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	assertAllApplied(t, db)
}

func TestUpWithoutSchema(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = "no_such_schema_" + testenv.NewID()[:8]
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if err := migrations.Up(context.Background(), db); err == nil {
		t.Fatal("Up succeeded with no existing schema in search_path")
	}
}

// Check fails on a schema that lacks migrations, naming the versions,
// passes once they are applied, fails again after one is undone, and
// passes a schema ahead of the build.
func TestCheck(t *testing.T) {
	t.Parallel()
	db := openDB(t, testenv.PostgresSchema(t))
	ctx := context.Background()
	var behind *migrations.BehindError
	if err := migrations.Check(ctx, db); !errors.As(err, &behind) || behind.Current != 0 || behind.Target < 1 {
		t.Fatalf("Check of an empty schema = %v, want a BehindError from 0", err)
	}
	target := behind.Target
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Fatalf("Check after Up = %v", err)
	}
	p, err := migrations.NewProvider(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); !errors.As(err, &behind) || behind.Current != target-1 || behind.Target != target {
		t.Fatalf("Check after one Down = %v, want a BehindError from %d to %d", err, target-1, target)
	}

	// A schema a newer build migrated further passes.
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO "+migrations.VersionTable+" (version_id, is_applied) VALUES ($1, true)", target+1); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Fatalf("Check of a schema ahead of the build = %v", err)
	}
}

// A domain's migrations are versioned in a table of their own: they apply
// after the records' without renumbering, and undoing them leaves the
// records' alone.
func TestDomainMigrationsHaveTheirOwnVersions(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	ctx := context.Background()
	db := openDB(t, url)
	shop := migrations.Of("shop", fstest.MapFS{
		"00001_orders.sql": {Data: []byte("-- +goose Up\nCREATE TABLE orders (id text PRIMARY KEY);\n-- +goose Down\nDROP TABLE orders;\n")},
	})
	if err := migrations.Check(ctx, db, shop); err == nil {
		t.Fatal("Check of the domain on an empty schema = nil, want it behind")
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, db, shop); err != nil {
		t.Fatalf("Up of the domain: %v", err)
	}
	if err := migrations.Check(ctx, db, shop); err != nil {
		t.Fatalf("Check of the domain after Up = %v", err)
	}
	var versions int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+migrations.DomainVersionTable("shop")+" WHERE version_id = 1").Scan(&versions); err != nil || versions != 1 {
		t.Fatalf("%s holds version 1 %d times (%v), want once", migrations.DomainVersionTable("shop"), versions, err)
	}
	p, err := migrations.NewProvider(ctx, db, shop)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Errorf("Check of the records after the domain's Down = %v, want them untouched", err)
	}
	var behind *migrations.BehindError
	if err := migrations.Check(ctx, db, shop); !errors.As(err, &behind) || behind.Current != 0 || behind.Target != 1 {
		t.Errorf("Check of the domain after its Down = %v, want behind from 0 to 1", err)
	}
}
