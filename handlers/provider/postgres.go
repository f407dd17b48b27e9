package provider

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	storepg "github.com/onceflow/onceflow/stores/postgres"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the provider's goose migrations: its table of
// charges, provider_charges.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embedded directory exists
	}
	return sub
}

// postgresBook is a book in the table provider_charges. A charge made in
// the unit of work of its Idempotency-Key record (transaction mode) joins
// that unit's transaction, so the two commit together.
type postgresBook struct{ db *pgxpool.Pool }

func (b postgresBook) conn(ctx context.Context) storepg.Querier {
	if tx, ok := storepg.TxFromContext(ctx); ok {
		return tx
	}
	return b.db
}

const addChargeSQL = `
INSERT INTO provider_charges (charge_id, payment_id, customer_id, amount_cents, currency, created_at)
VALUES ($1, $2, $3, $4, $5, $6)`

func (b postgresBook) add(ctx context.Context, c Charge) error {
	if _, err := b.conn(ctx).Exec(ctx, addChargeSQL, c.ID, c.PaymentID, c.CustomerID, c.AmountCents, c.Currency, c.CreatedAt); err != nil {
		return fmt.Errorf("recording charge of payment %q: %w", c.PaymentID, err)
	}
	return nil
}

const countChargesSQL = `
SELECT count(*) FROM provider_charges WHERE $1 = '' OR payment_id = $1`

func (b postgresBook) count(ctx context.Context, paymentID string) (int64, error) {
	var n int64
	if err := b.db.QueryRow(ctx, countChargesSQL, paymentID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting charges: %w", err)
	}
	return n, nil
}
