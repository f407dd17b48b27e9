package repocheck

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// roleSQL is the script that creates the service's PostgreSQL role, which
// the deploy files' DATABASE_URL names.
const roleSQL = "deploy/postgres/role.sql"

// TestDatabaseRoleRunsTheService runs deploy/postgres/role.sql, twice, on
// a PostgreSQL of the test's own, as its superuser, in a database named
// after the service, and then the service as that role alone: it is no
// superuser and may create no database or role; the migrations (records
// and domain) and what the service creates as it runs (the sql
// transport's tables and the records' partitions; in transaction mode,
// the outbox) are made as that role; three copies of a request are
// charged once; and every table is in the role's schema, none in public.
func TestDatabaseRoleRunsTheService(t *testing.T) {
	t.Parallel()
	srv := testenv.PostgresServer(t)
	role := filepath.Base(readDockerfile(t).Entrypoint[0])
	script := readFile(t, roleSQL)
	for _, tc := range []struct {
		db      string
		environ []string
	}{
		{role, []string{"TRANSPORT=sql", "STORE=postgres", "PG_RECORDS_LAYOUT=partitioned"}},
		{role + "_tx", []string{"STORE=postgres", "DEDUP_MODE=transaction"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pgExec(t, ctx, srv.URL(), "CREATE DATABASE "+pgx.Identifier{tc.db}.Sanitize())
		admin := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", srv.Addr(), tc.db)
		for range 2 {
			pgExec(t, ctx, admin, script)
		}
		var super, createDB, createRole, replication, bypassRLS bool
		pgQuery(t, ctx, admin, `SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = $1`,
			[]any{role}, &super, &createDB, &createRole, &replication, &bypassRLS)
		if super || createDB || createRole || replication || bypassRLS {
			t.Fatalf("%s: role %s: superuser %v, createdb %v, createrole %v, replication %v, bypassrls %v: want none",
				roleSQL, role, super, createDB, createRole, replication, bypassRLS)
		}

		url := fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", role, srv.Addr(), tc.db)
		environ := append([]string{"DATABASE_URL=" + url}, tc.environ...)
		svc := apptest.Start(t, testdomain.Domain(), environ...)
		// Three copies of one request: charged, noticed and receipted
		// once, in the ledger, whichever mode dedups them.
		for range 3 {
			flowtest.PostOK(t, svc, "r-role-1")
		}
		testenv.WaitFor(t, flowtest.Wait, "one request charged once", func() bool { return flowtest.Tally(t, svc) == flowtest.Want(1, 3) })
		if err := svc.Stop(); err != nil {
			t.Errorf("%v: %v", tc.environ, err)
		}

		var inRole, inPublic, foreign int
		pgQuery(t, ctx, admin, `SELECT count(*) FILTER (WHERE schemaname = $1), count(*) FILTER (WHERE schemaname = 'public'),
			count(*) FILTER (WHERE schemaname = $1 AND tableowner <> $1) FROM pg_tables`, []any{role}, &inRole, &inPublic, &foreign)
		if inRole == 0 || inPublic != 0 || foreign != 0 {
			t.Errorf("%v: %d tables in schema %s (%d owned by another role), %d in public: want them all in the role's schema, its own",
				tc.environ, inRole, role, foreign, inPublic)
		}
	}
}

// pgExec runs sql, one or more statements, on a connection to url.
func pgExec(t *testing.T, ctx context.Context, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%.60q: %v", sql, err)
	}
}

// pgQuery scans the one row of sql with args into dest.
func pgQuery(t *testing.T, ctx context.Context, url, sql string, args []any, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		t.Fatalf("%.60q: %v", sql, err)
	}
}
