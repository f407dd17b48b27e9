package chaos

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
)

// Figures is what the test domain's ledger holds, and what its provider
// did.
type Figures struct {
	// Charges are the ledger's charge rows, and the distinct requests
	// charged at least once among them.
	Charges testdomain.Counts
	// Notices are the ledger's notice rows, and the distinct requests
	// notified at least once.
	Notices testdomain.Counts
	// Provider is the charges the provider made, and the distinct
	// requests among them: the money, which the ledger's rows record only
	// as far as the handlers got.
	Provider provider.Counts
}

// Missing is how many of sent unique requests were never charged.
func (f Figures) Missing(unique int) int64 { return int64(unique) - f.Charges.IDs }

// Doubles is how many charge rows the ledger holds beyond the first of
// their request.
func (f Figures) Doubles() int64 { return f.Charges.Rows - f.Charges.IDs }

// ProviderDoubles is how many charges the provider made beyond the first
// of their request: a request charged twice.
func (f Figures) ProviderDoubles() int64 { return f.Provider.Charges - f.Provider.IDs }

// Done reports whether every one of unique requests is charged and
// notified.
func (f Figures) Done(unique int) bool {
	return f.Charges.IDs >= int64(unique) && f.Notices.IDs >= int64(unique)
}

// ReadLedger counts the test domain's ledger in PostgreSQL through db (on
// the DATABASE_URL of the instances, schema included): its Charges and
// Notices. The ledger's table is created by the domain's migrations:
// start an instance first.
func ReadLedger(ctx context.Context, db *pgxpool.Pool) (Figures, error) {
	t, err := testdomain.NewPostgresLedger(db).Tally(ctx, "")
	if err != nil {
		return Figures{}, fmt.Errorf("reading the ledger: %w", err)
	}
	return Figures{Charges: t.Charges, Notices: t.Notices}, nil
}
