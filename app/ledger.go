package app

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	ledgerpg "github.com/onceflow/onceflow/handlers/postgres"
	"github.com/onceflow/onceflow/stores/postgres"
)

// newLedger keeps the ledger in PostgreSQL when DATABASE_URL is set, so that
// several instances share it, and in memory otherwise. Its writes join the
// unit of work of DEDUP_MODE=transaction found in their context.
func newLedger(pool *pgxpool.Pool) handlers.Ledger {
	if pool != nil {
		return ledgerpg.NewLedger(pool, ledgerpg.WithTxFromContext(postgres.TxFromContext))
	}
	return memory.NewLedger()
}
