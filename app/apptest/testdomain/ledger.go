package testdomain

import (
	"context"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// Kind is a kind of ledger row: the effect of one step of the flow.
type Kind string

// The kinds of row.
const (
	// Requests: POST /v1/charges accepted a request.
	Requests Kind = "request"
	// Charges: ChargeRoute charged a request at the provider.
	Charges Kind = "charge"
	// Notices: NotifyRoute handled a charged request.
	Notices Kind = "notice"
	// Receipts: ReceiptRoute handled a charged request.
	Receipts Kind = "receipt"
)

// Ledger keeps the domain's rows. [MemoryLedger] and [PostgresLedger]
// are its implementations, safe for concurrent use.
//
// A row added in a receiver's run carries the run's effect key
// ([receiver.EffectKey] of the effect "ledger-" and the kind), and a
// row of that key is added once: a run repeated (a retry after a
// failure, a takeover after a crash) adds nothing. Outside a run, or in
// one whose keys were taken away ([receiver.WithoutEffectKeys]), every
// Add adds a row: then only the receiver keeps an effect once, and the
// rows count the runs.
type Ledger interface {
	// Add adds a row of kind for id (an [Event.Key]), unless the run ctx
	// belongs to has added its row of kind.
	Add(ctx context.Context, kind Kind, id string) error
	// Tally counts the rows whose id starts with prefix; "" counts all.
	Tally(ctx context.Context, prefix string) (Tally, error)
	// TallyOf counts the rows of id.
	TallyOf(ctx context.Context, id string) (Tally, error)
}

// Counts is what a ledger holds of one kind.
type Counts struct {
	// Rows is the number of rows.
	Rows int64 `json:"rows"`
	// IDs is the number of distinct ids among them: Rows - IDs rows
	// are doubles.
	IDs int64 `json:"ids"`
}

// Tally is what a ledger holds of each kind: GET /v1/summary's body.
type Tally struct {
	Requests Counts `json:"requests"`
	Charges  Counts `json:"charges"`
	Notices  Counts `json:"notices"`
	Receipts Counts `json:"receipts"`
}

// of is t's counts of kind; nil for an unknown kind.
func (t *Tally) of(kind Kind) *Counts {
	switch kind {
	case Requests:
		return &t.Requests
	case Charges:
		return &t.Charges
	case Notices:
		return &t.Notices
	case Receipts:
		return &t.Receipts
	}
	return nil
}

// rowKey is the effect key of the row of kind that the run ctx belongs
// to adds; false outside a run.
func rowKey(ctx context.Context, kind Kind) (string, bool) {
	return receiver.EffectKey(ctx, "ledger-"+string(kind))
}
