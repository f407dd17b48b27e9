package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// Ledger records payments and the side effects done for them.
// AppendCharge, AppendNotification and AppendReceipt stand for side effects
// (recording a charge the provider made, sending an email, issuing a
// receipt) and show how an effect in a database of one's own happens once:
//
//   - In a receiver's run, the row carries the run's effect key for its kind
//     ([LedgerEffectKey]), the same for every delivery, retry and takeover
//     of one message in one handler, and an append whose key the ledger
//     already holds adds nothing: the row of the first run stands, and the
//     repeat returns nil. A run that appended and then failed, or was
//     killed before its record completed, appends nothing when it runs
//     again, in lease mode too.
//   - Outside a run, or in one whose keys were taken away
//     ([receiver.WithoutEffectKeys]), every call adds a row, with no
//     deduplication: only the idempotent receiver in front of the handlers
//     keeps the effect from happening twice, and the rows count the runs.
//
// A run appends at most one row of each kind: a second append of one kind
// in the same run is taken for a repeat. The keys are per handler and
// message, so two handlers' runs, or two messages', add two rows.
//
// A payment belongs to the API client that created it ([Payment].Client),
// and payment ids are the client's own: one client's payment id never
// names, reads or counts another client's payment, even under the same id.
//
// Implementations are safe for concurrent use. Each method is atomic: a
// side effect's row and the status change it causes are written together or
// not at all. The implementations are in packages named after what they
// keep the ledger in: [github.com/onceflow/onceflow/handlers/postgres] and
// [github.com/onceflow/onceflow/handlers/memory]; both pass
// [github.com/onceflow/onceflow/handlers/ledgertest].
type Ledger interface {
	// RecordPayment records p with status accepted and returns when it was
	// first accepted. Recording the same payment again changes nothing and
	// returns the same time, so a re-sent request yields the same event
	// payload; recording a payment id that p's client already used with a
	// different customer, amount or currency returns ErrConflict. Another
	// client's payment of the same id is another payment.
	RecordPayment(ctx context.Context, p Payment) (acceptedAt time.Time, err error)

	// AppendCharge adds one charge row for p (the payment of p.Client
	// with id p.ID), with chargeID, the provider's id of the charge,
	// unless the run's charge row is already there (see above), and
	// moves its status to charged unless it is further. A payment not
	// yet recorded is recorded from p.
	AppendCharge(ctx context.Context, p Payment, chargeID string) error

	// AppendNotification adds one notification row for p, unless the
	// run's is already there, and moves its status to notified. A payment
	// not yet recorded is recorded from p.
	AppendNotification(ctx context.Context, p Payment, chargeID string) error

	// AppendReceipt adds one receipt row for p's charge chargeID, unless
	// the run's is already there, and leaves the status of a recorded
	// payment as it is. A payment not yet recorded is recorded from p, as
	// charged.
	AppendReceipt(ctx context.Context, p Payment, chargeID string) error

	// Payment returns the state of client's payment id, or ErrNotFound,
	// also when only another client has a payment of that id.
	Payment(ctx context.Context, client, id string) (PaymentState, error)

	// Summary counts what the ledger holds of client's payments.
	Summary(ctx context.Context, client string) (Summary, error)
}

// LedgerEffectKey returns the effect key of the ledger row of kind row
// ("charge", "notification" or "receipt") that the run ctx belongs to
// appends: [receiver.EffectKey] of the effect named "ledger-" and the
// kind. It reports false outside a receiver's run and in one whose keys
// were taken away. Every [Ledger] keys its rows with it.
//
// The name is not what keeps rows apart: each kind has a table of its
// own, a handler appends one row of a kind per run, and the keys already
// differ between handlers. It is there because the ledger is one effect
// among those a handler may make, and a handler with several effects
// names each: a key a ledger row holds is never the one the handler hands
// another system (the unnamed key, say) for another effect. Like a
// handler's name, the name is part of every key: changed once deployed,
// a repeat of a run from before the change appends again.
func LedgerEffectKey(ctx context.Context, row string) (string, bool) {
	return receiver.EffectKey(ctx, "ledger-"+row)
}

// Ledger errors.
var (
	// ErrNotFound: the client has no payment of the requested id.
	ErrNotFound = errors.New("payment not found")
	// ErrConflict: the client already used the payment id for a payment
	// with other details.
	ErrConflict = errors.New("payment id already used with different details")
)

// Payment is what a payment is: whose it is, who pays how much.
type Payment struct {
	// Client is the API client that owns the payment: the identity that
	// authentication put in the context of the request that created it
	// (API_KEYS' client), or the client field of an event a producer
	// published; empty for the anonymous client.
	Client      string
	ID          string
	CustomerID  string
	AmountCents int64
	Currency    string
}

// IdempotencyKey is the payment's key across clients, which its events
// carry as their idempotency key (and, on Kafka, their message key): the
// id of an anonymous payment, else the client, a slash and the id. An id
// holds no slash, so no two payments share a key.
func (p Payment) IdempotencyKey() string {
	if p.Client == "" {
		return p.ID
	}
	return p.Client + "/" + p.ID
}

// Status is how far a payment has come. It only moves forward.
type Status string

// Payment statuses, in order.
const (
	StatusAccepted Status = "accepted"
	StatusCharged  Status = "charged"
	StatusNotified Status = "notified"
)

// PaymentState is a payment's status and how many side effects were done for
// it.
type PaymentState struct {
	PaymentID     string `json:"payment_id"`
	Status        Status `json:"status"`
	Charges       int64  `json:"charges"`
	Notifications int64  `json:"notifications"`
	Receipts      int64  `json:"receipts"`
}

// Summary counts one client's payments in the ledger.
type Summary struct {
	// Payments is the number of distinct payments charged at least once.
	Payments int64 `json:"payments"`
	// Charges is the number of charge rows: more than Payments means a
	// payment was charged twice.
	Charges int64 `json:"charges"`
	// Notifications is the number of notification rows.
	Notifications int64 `json:"notifications"`
	// Receipts is the number of receipt rows.
	Receipts int64 `json:"receipts"`
}
