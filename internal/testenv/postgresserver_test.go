package testenv_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/internal/testenv"
)

// A committed row survives a fast shutdown and an immediate one (a crash)
// with a start on the same port and data; while down, the server refuses
// connections. The fault suite's PostgreSQL restarts and the stores'
// crashed linearizability runs rely on both.
func TestPostgresProcessRestart(t *testing.T) {
	p := testenv.PostgresServer(t)
	run := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(t.Context(), p.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	run("CREATE TABLE kept (n int)")
	for i, c := range []struct {
		name string
		down func() error
	}{
		{"stopped", p.Stop},
		{"crashed", func() error { p.Crash(); return nil }},
	} {
		run("INSERT INTO kept VALUES (1)")
		if err := c.down(); err != nil {
			t.Fatal(err)
		}
		if conn, err := pgx.Connect(t.Context(), p.URL()); err == nil {
			_ = conn.Close(t.Context())
			t.Fatalf("%s: connected while down", c.name)
		}
		if err := p.Start(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		conn, err := pgx.Connect(t.Context(), p.URL())
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = conn.QueryRow(t.Context(), "SELECT count(*) FROM kept").Scan(&n)
		_ = conn.Close(t.Context())
		if err != nil || n != i+1 {
			t.Errorf("%s: %d rows, %v; want %d", c.name, n, err, i+1)
		}
	}
}
