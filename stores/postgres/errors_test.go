package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

func TestClosedPoolIsClosedAndUnavailable(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	pool.Close()
	_, err := s.Claim(testContext(t), "k", []byte("fp"), time.Minute)
	if !errors.Is(err, stores.ErrUnavailable) || !errors.Is(err, stores.ErrClosed) {
		t.Fatalf("Claim on a closed pool: %v, want ErrUnavailable and ErrClosed", err)
	}
}

func TestMissingTableIsUnavailableWithCause(t *testing.T) {
	t.Parallel()
	_, pool := newStore(t)
	s := mustNew(t, pool, postgres.Config{Table: "no_such_table"})
	_, err := s.Claim(testContext(t), "k", []byte("fp"), time.Minute)
	var pgErr *pgconn.PgError
	if !errors.Is(err, stores.ErrUnavailable) || !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("Claim on a missing table: %v, want ErrUnavailable wrapping SQLSTATE 42P01", err)
	}
}

func TestTerminatedConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := testContext(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	// The timeout makes the call wait until the backend is gone.
	if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", pid); err != nil {
		t.Fatal(err)
	}
	_, err = s.With(conn.Conn()).Claim(ctx, "k", []byte("fp"), time.Minute)
	if !errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Claim on a terminated connection: %v, want ErrUnavailable", err)
	}
}

func TestDeadlineWhileWaitingIsContextError(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := testContext(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := s.With(tx).Claim(ctx, "k", []byte("fp"), time.Minute); err != nil {
		t.Fatal(err)
	}

	// The duplicate waits on the open transaction's row until its deadline.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = s.Claim(short, "k", []byte("fp"), time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Claim past its deadline: %v, want only context.DeadlineExceeded", err)
	}
}

func TestConfigTable(t *testing.T) {
	t.Parallel()
	_, pool := newStore(t)
	for _, bad := range []string{"a.b.c", ".records", "schema."} {
		if _, err := postgres.New(pool, postgres.Config{Table: bad}); err == nil {
			t.Errorf("New with table %q succeeded", bad)
		}
	}
	if _, err := postgres.New(nil, postgres.Config{}); err == nil {
		t.Error("New without a database succeeded")
	}

	var schema string
	if err := pool.QueryRow(testContext(t), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	qualified := mustNew(t, pool, postgres.Config{Table: schema + "." + postgres.DefaultTable})
	c := wantClaim(t, qualified, "k", stores.Acquired)
	if err := qualified.Complete(testContext(t), "k", c.Token, []byte("r"), time.Hour); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, mustNew(t, pool, postgres.Config{}), "k", stores.Completed)
}
