// Package postgres keeps the payments ledger, a [handlers.Ledger], in
// PostgreSQL with pgx: the tables of its own migrations ([Migrations],
// 00001_ledger.sql, 00002_receipts.sql, 00003_payment_owner.sql, which
// keys each payment by its client and id, and 00004_effect_keys.sql, which
// keeps each side effect of a receiver's run once). Its writes can join the
// transaction of a [storepg.Unit], so that a handler's side effect commits
// or rolls back with its idempotency record (DEDUP_MODE=transaction).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/handlers"
	storepg "github.com/onceflow/onceflow/stores/postgres"
)

// Ledger is a [handlers.Ledger] in the PostgreSQL tables payments, charges,
// notifications and receipts, which the migrations must have created;
// unqualified names resolve through the search_path. Every method is one
// SQL statement. It is safe for concurrent use when its [storepg.Querier]
// is (a pool is), and several processes may share the tables. It owns
// nothing: closing the pool is the caller's business.
type Ledger struct {
	db            storepg.Querier
	txFromContext func(context.Context) (pgx.Tx, bool)
}

var _ handlers.Ledger = (*Ledger)(nil)

// Option configures a Ledger.
type Option func(*Ledger)

// WithTxFromContext makes the ledger run its statements on the transaction
// that txFromContext finds in the context of a call, and on the ledger's own
// connection when it finds none. Pass [storepg.TxFromContext]: the ledger's
// writes then join the unit of work that also holds the idempotency claim
// and the outbox, and commit or roll back with them.
func WithTxFromContext(txFromContext func(context.Context) (pgx.Tx, bool)) Option {
	return func(l *Ledger) { l.txFromContext = txFromContext }
}

// NewLedger returns a ledger on db, typically a *pgxpool.Pool.
func NewLedger(db storepg.Querier, opts ...Option) *Ledger {
	l := &Ledger{db: db}
	for _, opt := range opts {
		opt(l)
	}
	return l
}

// With returns a ledger with the same options that runs its statements on q
// instead, typically the caller's pgx.Tx, so that they commit or roll back
// with it. It is cheap; make one per transaction.
func (l *Ledger) With(q storepg.Querier) *Ledger {
	return &Ledger{db: q, txFromContext: l.txFromContext}
}

func (l *Ledger) conn(ctx context.Context) storepg.Querier {
	if l.txFromContext != nil {
		if tx, ok := l.txFromContext(ctx); ok {
			return tx
		}
	}
	return l.db
}

// recordPaymentSQL inserts the payment or, when its client has one of its
// id, returns the existing details (the no-op update makes RETURNING see
// the existing row, even one committed by a concurrent transaction).
const recordPaymentSQL = `
INSERT INTO payments (client, payment_id, customer_id, amount_cents, currency, status)
VALUES ($1, $2, $3, $4, $5, 'accepted')
ON CONFLICT (client, payment_id) DO UPDATE SET payment_id = EXCLUDED.payment_id
RETURNING customer_id, amount_cents, currency, created_at`

// RecordPayment implements [handlers.Ledger].
func (l *Ledger) RecordPayment(ctx context.Context, p handlers.Payment) (time.Time, error) {
	var (
		got        = handlers.Payment{Client: p.Client, ID: p.ID}
		acceptedAt time.Time
	)
	err := l.conn(ctx).QueryRow(ctx, recordPaymentSQL, p.Client, p.ID, p.CustomerID, p.AmountCents, p.Currency).
		Scan(&got.CustomerID, &got.AmountCents, &got.Currency, &acceptedAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, err)
	}
	if got != p {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, handlers.ErrConflict)
	}
	return acceptedAt.UTC(), nil
}

// The append statements' parameters are the payment's client, id,
// customer, amount and currency, then the charge id and the run's effect
// key (NULL outside a run). Each adds its row unless one with the same
// effect key exists: a repeated run adds nothing, and the row of the first
// run stands. The CTE that records and advances the payment runs either
// way and changes nothing the second time, since a status only moves
// forward.

// appendChargeSQL records the payment if absent, advances an accepted one
// to charged, and adds the charge row, in one statement.
const appendChargeSQL = `
WITH payment AS (
    INSERT INTO payments (client, payment_id, customer_id, amount_cents, currency, status)
    VALUES ($1, $2, $3, $4, $5, 'charged')
    ON CONFLICT (client, payment_id) DO UPDATE SET status = 'charged', updated_at = now()
    WHERE payments.status = 'accepted'
)
INSERT INTO charges (client, payment_id, amount_cents, currency, charge_id, effect_key)
VALUES ($1, $2, $4, $5, $6, $7)
ON CONFLICT (effect_key) DO NOTHING`

// AppendCharge implements [handlers.Ledger].
func (l *Ledger) AppendCharge(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "charge", appendChargeSQL, p, chargeID)
}

// appendNotificationSQL records the payment if absent, advances it to
// notified, and adds the notification row, in one statement.
const appendNotificationSQL = `
WITH payment AS (
    INSERT INTO payments (client, payment_id, customer_id, amount_cents, currency, status)
    VALUES ($1, $2, $3, $4, $5, 'notified')
    ON CONFLICT (client, payment_id) DO UPDATE SET status = 'notified', updated_at = now()
    WHERE payments.status <> 'notified'
)
INSERT INTO notifications (client, payment_id, customer_id, charge_id, effect_key)
VALUES ($1, $2, $3, $6, $7)
ON CONFLICT (effect_key) DO NOTHING`

// AppendNotification implements [handlers.Ledger].
func (l *Ledger) AppendNotification(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "notification", appendNotificationSQL, p, chargeID)
}

// appendReceiptSQL records the payment if absent and adds the receipt row,
// in one statement. It leaves an existing payment row alone, not even
// meeting it as a conflict: notify_customer updates that row at the same
// time, and on the sql transport in transaction mode, whose consumer
// transaction keeps its first snapshot across retries, a statement that
// conflicts with the newer row fails to serialise on every retry.
const appendReceiptSQL = `
WITH payment AS (
    INSERT INTO payments (client, payment_id, customer_id, amount_cents, currency, status)
    SELECT $1, $2, $3, $4, $5, 'charged'
    WHERE NOT EXISTS (SELECT FROM payments WHERE client = $1 AND payment_id = $2)
    ON CONFLICT (client, payment_id) DO NOTHING
)
INSERT INTO receipts (client, payment_id, customer_id, amount_cents, currency, charge_id, effect_key)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (effect_key) DO NOTHING`

// AppendReceipt implements [handlers.Ledger].
func (l *Ledger) AppendReceipt(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "receipt", appendReceiptSQL, p, chargeID)
}

// append runs one of the append statements, for a row of kind what.
func (l *Ledger) append(ctx context.Context, what, sql string, p handlers.Payment, chargeID string) error {
	var key any // NULL: no run, or its keys taken away
	if k, ok := handlers.LedgerEffectKey(ctx, what); ok {
		key = k
	}
	_, err := l.conn(ctx).Exec(ctx, sql, p.Client, p.ID, p.CustomerID, p.AmountCents, p.Currency, chargeID, key)
	if err != nil {
		return fmt.Errorf("appending %s for payment %q: %w", what, p.ID, err)
	}
	return nil
}

const paymentSQL = `
SELECT p.status,
       (SELECT count(*) FROM charges c WHERE c.client = p.client AND c.payment_id = p.payment_id),
       (SELECT count(*) FROM notifications n WHERE n.client = p.client AND n.payment_id = p.payment_id),
       (SELECT count(*) FROM receipts r WHERE r.client = p.client AND r.payment_id = p.payment_id)
FROM payments p
WHERE p.client = $1 AND p.payment_id = $2`

// Payment implements [handlers.Ledger].
func (l *Ledger) Payment(ctx context.Context, client, id string) (handlers.PaymentState, error) {
	s := handlers.PaymentState{PaymentID: id}
	err := l.conn(ctx).QueryRow(ctx, paymentSQL, client, id).Scan(&s.Status, &s.Charges, &s.Notifications, &s.Receipts)
	if errors.Is(err, pgx.ErrNoRows) {
		return handlers.PaymentState{}, fmt.Errorf("reading payment %q: %w", id, handlers.ErrNotFound)
	}
	if err != nil {
		return handlers.PaymentState{}, fmt.Errorf("reading payment %q: %w", id, err)
	}
	return s, nil
}

const summarySQL = `
SELECT (SELECT count(DISTINCT payment_id) FROM charges WHERE client = $1),
       (SELECT count(*) FROM charges WHERE client = $1),
       (SELECT count(*) FROM notifications WHERE client = $1),
       (SELECT count(*) FROM receipts WHERE client = $1)`

// Summary implements [handlers.Ledger].
func (l *Ledger) Summary(ctx context.Context, client string) (handlers.Summary, error) {
	var s handlers.Summary
	if err := l.conn(ctx).QueryRow(ctx, summarySQL, client).Scan(&s.Payments, &s.Charges, &s.Notifications, &s.Receipts); err != nil {
		return handlers.Summary{}, fmt.Errorf("summarising ledger: %w", err)
	}
	return s, nil
}
