package chaos

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
	"github.com/onceflow/onceflow/internal/testenv"
)

// startProvider runs the test domain's provider that a row's instances
// all charge (their testdomain.ProviderSetting), in this process, as a
// real one runs beside them: its Idempotency-Key records and its charges
// in a PostgreSQL schema of its own on the shared server, which no row's
// fault touches, its log in logPath. It stops when t ends.
func startProvider(t testing.TB, logPath string) *provider.Provider {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	// Rows run side by side in the short variant: a small pool each
	// leaves the server's connections to the instances.
	cfg.MaxConns = 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider.Start(ctx, provider.Config{DB: db, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatalf("starting the provider: %v", err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		db.Close()
		_ = logs.Close()
	})
	return p
}
