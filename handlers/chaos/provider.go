package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/internal/testenv"
)

// startProvider runs the payment provider that a row's instances all
// charge (their PAYMENT_PROVIDER_URL), in this process, as a real one runs
// beside them: its Idempotency-Key records and its charges in a PostgreSQL
// schema of its own on the shared server, which no row's fault touches,
// its log in logPath. It stops when t ends. It returns the provider's URL
// and its database's pool, which ReadProvider reads.
func startProvider(t testing.TB, logPath string) (url string, db *pgxpool.Pool) {
	t.Helper()
	databaseURL := testenv.PostgresSchema(t)
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	// Rows run side by side in the short variant: a small pool each
	// leaves the server's connections to the instances.
	cfg.MaxConns = 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := provider.Listen(ctx, "127.0.0.1:0", provider.Config{DB: db, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatalf("starting the payment provider: %v", err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		db.Close()
		_ = logs.Close()
	})
	return s.URL(), db
}

// ReadProvider counts the charges the provider with its database db
// made: ProviderCharges and ProviderCharged of Figures.
func ReadProvider(ctx context.Context, db *pgxpool.Pool) (charges, charged int, err error) {
	err = db.QueryRow(ctx, `SELECT count(*), count(DISTINCT payment_id) FROM provider_charges`).Scan(&charges, &charged)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the provider's charges: %w", err)
	}
	return charges, charged, nil
}
