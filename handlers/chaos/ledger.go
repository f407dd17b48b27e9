package chaos

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Figures is what the ledger holds, and what the payment provider did.
type Figures struct {
	Charges       int // charge rows
	Charged       int // distinct payments charged at least once
	Notifications int // notification rows
	Notified      int // distinct payments notified at least once
	// ProviderCharges is the charges the provider made, ProviderCharged
	// the distinct payments among them: the money, which the ledger's
	// rows record only as far as the handlers got.
	ProviderCharges int
	ProviderCharged int
}

// Missing is how many of sent unique payments were never charged.
func (f Figures) Missing(unique int) int { return unique - f.Charged }

// Doubles is how many charge rows the ledger holds beyond the first of
// their payment.
func (f Figures) Doubles() int { return f.Charges - f.Charged }

// ProviderDoubles is how many charges the provider made beyond the first
// of their payment: a customer charged twice.
func (f Figures) ProviderDoubles() int { return f.ProviderCharges - f.ProviderCharged }

// ReadLedger counts the ledger in PostgreSQL through db (on the
// DATABASE_URL of the instances, schema included). The ledger's tables are
// created by the service's migrations: start an instance first.
func ReadLedger(ctx context.Context, db *pgxpool.Pool) (Figures, error) {
	var f Figures
	err := db.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM charges), (SELECT count(DISTINCT payment_id) FROM charges),
	(SELECT count(*) FROM notifications), (SELECT count(DISTINCT payment_id) FROM notifications)`).
		Scan(&f.Charges, &f.Charged, &f.Notifications, &f.Notified)
	if err != nil {
		return Figures{}, fmt.Errorf("reading the ledger: %w", err)
	}
	return f, nil
}
