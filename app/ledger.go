package app

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/handlers"
)

// newLedger keeps the ledger in PostgreSQL when DATABASE_URL is set, so that
// several instances share it, and in memory otherwise.
func newLedger(pool *pgxpool.Pool) handlers.Ledger {
	if pool != nil {
		return handlers.NewPostgresLedger(pool)
	}
	return handlers.NewMemoryLedger()
}
