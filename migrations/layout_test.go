package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
)

func TestPartitionedLayout(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	ctx := context.Background()
	if err := migrations.UpURL(ctx, url, migrations.WithLayout(migrations.Partitioned)); err != nil {
		t.Fatalf("Up partitioned: %v", err)
	}
	// The layout is chosen once: a later Up with the default changes nothing.
	if err := migrations.UpURL(ctx, url); err != nil {
		t.Fatalf("Up after partitioned: %v", err)
	}
	db := openDB(t, url)
	var kind string
	var covered bool
	err := db.QueryRowContext(ctx, `SELECT c.relkind::text, EXISTS (
			SELECT 1 FROM pg_inherits i WHERE i.inhparent = c.oid
			AND pg_get_expr((SELECT relpartbound FROM pg_class WHERE oid = i.inhrelid), i.inhrelid) LIKE 'FOR VALUES FROM%')
		FROM pg_class c WHERE c.oid = 'idempotency_records'::regclass`).Scan(&kind, &covered)
	if err != nil {
		t.Fatal(err)
	}
	if kind != "p" || !covered {
		t.Fatalf("idempotency_records: relkind %q, has a range partition %v; want a partitioned table with one", kind, covered)
	}
	// A record of now lands in the first partition.
	if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_records (key, state, token, fingerprint, created_at, expires_at)
		VALUES ('k', 'in_progress', 't', '', now(), now() + interval '1 minute')`); err != nil {
		t.Fatalf("inserting a record of now: %v", err)
	}
}

func TestUnknownLayoutIsRefused(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresSchema(t)
	err := migrations.UpURL(context.Background(), url, migrations.WithLayout("sharded"))
	if err == nil || !strings.Contains(err.Error(), `"sharded"`) || !strings.Contains(err.Error(), "partitioned") {
		t.Fatalf("Up with an unknown layout = %v; want an error naming it and the layouts", err)
	}
}
