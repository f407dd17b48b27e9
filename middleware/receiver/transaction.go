package receiver

import (
	"context"

	"github.com/onceflow/onceflow/stores"
)

// Transactor opens units of work for transaction mode (Config.Transactor):
// the claim, everything the function writes through the unit's context and
// the completed record then commit, or roll back, together. Package
// exactlyonce has the PostgreSQL one.
type Transactor interface {
	// Begin starts a unit of work within ctx. It may join a transaction
	// that ctx already carries (as a savepoint, say) rather than open one.
	Begin(ctx context.Context) (Unit, error)
}

// Unit is one open unit of work, used by one goroutine.
type Unit interface {
	// Context returns the context to run the function in: the Begin
	// context, carrying the unit so that code writing to the same database
	// joins it.
	Context() context.Context
	// Store is the idempotency store bound to the unit: its claim holds the
	// key (a concurrent claim waits) until Commit or Rollback.
	Store() stores.Store
	// Commit makes every write of the unit durable at once.
	Commit(ctx context.Context) error
	// Rollback discards every write of the unit. It is a no-op after
	// Commit or a previous Rollback.
	Rollback(ctx context.Context) error
}
