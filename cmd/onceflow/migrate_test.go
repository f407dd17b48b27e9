package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
)

// A deployment that migrates as a step of its own: serve refuses an empty
// schema naming the command, migrate up applies it, serve starts, and
// migrate down and status show the last migration undone.
func TestMigrate(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedAddr(t)
	environ := []string{"HTTP_ADDR=" + addr, "LOG_LEVEL=warn", "ALLOW_ANONYMOUS=true", "STORE=postgres",
		"DATABASE_URL=" + testenv.PostgresSchema(t), "MIGRATE_ON_START=false"}
	migrate := func(action string) string {
		t.Helper()
		var out bytes.Buffer
		if err := runTest(context.Background(), []string{"migrate", action}, environ, &out, &out); err != nil {
			t.Fatalf("migrate %s: %v\n%s", action, err, out.String())
		}
		return out.String()
	}
	err := runTest(context.Background(), []string{"serve"}, environ, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "run `onceflow migrate up`") {
		t.Fatalf("serve on an empty schema: %v, want a refusal naming onceflow migrate up", err)
	}
	if out := migrate("status"); !strings.Contains(out, "pending") || strings.Contains(out, "applied") {
		t.Fatalf("status of an empty schema:\n%s", out)
	}
	out := migrate("up")
	if !strings.Contains(out, "records: OK") || !strings.Contains(out, "up 00001_idempotency_records.sql") ||
		!strings.Contains(out, "testdomain: OK") {
		t.Fatalf("up:\n%s", out)
	}
	// The domain's migrations are applied after the records', so the last
	// one up applied is the domain's latest.
	applied := regexp.MustCompile(`up (\S+\.sql)`).FindAllStringSubmatch(out, -1)
	latest := applied[len(applied)-1][1]
	if out := migrate("up"); !strings.Contains(out, "no pending migrations") {
		t.Fatalf("second up:\n%s", out)
	}

	if err := serve(t, environ, addr)(); err != nil {
		t.Fatalf("serve on a current schema: %v", err)
	}

	// The domain's latest migration is undone first: it came last.
	if out := migrate("down"); !strings.HasPrefix(out, "testdomain: OK") || !strings.Contains(out, " down "+latest) {
		t.Fatalf("down:\n%s", out)
	}
	if out := migrate("status"); strings.Count(out, "pending") != 1 || !strings.Contains(out, "applied") {
		t.Fatalf("status after one down:\n%s", out)
	}
	for _, tc := range []struct {
		args, environ []string
		want          string
	}{
		{[]string{"migrate", "sideways"}, environ, `unknown migrate action "sideways": use up, down or status`},
		{[]string{"migrate"}, environ, "migrate takes one action"},
		{[]string{"migrate", "up"}, []string{"LOG_LEVEL=warn"}, "DATABASE_URL is required"},
	} {
		if err := runTest(context.Background(), tc.args, tc.environ, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
