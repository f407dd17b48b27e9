package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Querier is what PostgresLedger needs of a connection: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx all provide it (as they do stores/postgres.Querier,
// which has the same methods).
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var (
	_ Querier = (*pgxpool.Pool)(nil)
	_ Querier = (*pgx.Conn)(nil)
	_ Querier = pgx.Tx(nil)
)

// PostgresLedger is a Ledger in the PostgreSQL tables of migration
// 00002_ledger.sql (payments, charges, notifications), which must have been
// applied; unqualified names resolve through the search_path. Every method is
// one SQL statement. It is safe for concurrent use when its Querier is (a
// pool is), and several processes may share the tables. It owns nothing:
// closing the pool is the caller's business.
type PostgresLedger struct {
	db            Querier
	txFromContext func(context.Context) (Querier, bool)
}

var _ Ledger = (*PostgresLedger)(nil)

// PostgresOption configures a PostgresLedger.
type PostgresOption func(*PostgresLedger)

// WithTxFromContext makes the ledger run its statements on the transaction
// that txFromContext finds in the context of a call, and on the ledger's own
// connection when it finds none. This is how the ledger's writes join the
// transaction that also holds the idempotency claim and the outbox, so that
// they commit or roll back together.
func WithTxFromContext(txFromContext func(context.Context) (Querier, bool)) PostgresOption {
	return func(l *PostgresLedger) { l.txFromContext = txFromContext }
}

// NewPostgresLedger returns a ledger on db, typically a *pgxpool.Pool.
func NewPostgresLedger(db Querier, opts ...PostgresOption) *PostgresLedger {
	l := &PostgresLedger{db: db}
	for _, opt := range opts {
		opt(l)
	}
	return l
}

// With returns a ledger with the same options that runs its statements on q
// instead, typically the caller's pgx.Tx, so that they commit or roll back
// with it. It is cheap; make one per transaction.
func (l *PostgresLedger) With(q Querier) *PostgresLedger {
	return &PostgresLedger{db: q, txFromContext: l.txFromContext}
}

func (l *PostgresLedger) conn(ctx context.Context) Querier {
	if l.txFromContext != nil {
		if tx, ok := l.txFromContext(ctx); ok {
			return tx
		}
	}
	return l.db
}

// recordPaymentSQL inserts the payment or, when its id exists, returns the
// existing details (the no-op update makes RETURNING see the existing row,
// even one committed by a concurrent transaction).
const recordPaymentSQL = `
INSERT INTO payments (payment_id, customer_id, amount_cents, currency, status)
VALUES ($1, $2, $3, $4, 'accepted')
ON CONFLICT (payment_id) DO UPDATE SET payment_id = EXCLUDED.payment_id
RETURNING customer_id, amount_cents, currency, created_at`

// RecordPayment implements Ledger.
func (l *PostgresLedger) RecordPayment(ctx context.Context, p Payment) (time.Time, error) {
	var (
		got        = Payment{ID: p.ID}
		acceptedAt time.Time
	)
	err := l.conn(ctx).QueryRow(ctx, recordPaymentSQL, p.ID, p.CustomerID, p.AmountCents, p.Currency).
		Scan(&got.CustomerID, &got.AmountCents, &got.Currency, &acceptedAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, err)
	}
	if got != p {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, ErrConflict)
	}
	return acceptedAt.UTC(), nil
}

// appendChargeSQL records the payment if absent, advances an accepted one
// to charged, and adds the charge row, in one statement.
const appendChargeSQL = `
WITH payment AS (
    INSERT INTO payments (payment_id, customer_id, amount_cents, currency, status)
    VALUES ($1, $2, $3, $4, 'charged')
    ON CONFLICT (payment_id) DO UPDATE SET status = 'charged', updated_at = now()
    WHERE payments.status = 'accepted'
)
INSERT INTO charges (payment_id, amount_cents, currency, charge_id)
VALUES ($1, $3, $4, $5)`

// AppendCharge implements Ledger.
func (l *PostgresLedger) AppendCharge(ctx context.Context, p Payment, chargeID string) error {
	_, err := l.conn(ctx).Exec(ctx, appendChargeSQL, p.ID, p.CustomerID, p.AmountCents, p.Currency, chargeID)
	if err != nil {
		return fmt.Errorf("appending charge for payment %q: %w", p.ID, err)
	}
	return nil
}

// appendNotificationSQL records the payment if absent, advances it to
// notified, and adds the notification row, in one statement.
const appendNotificationSQL = `
WITH payment AS (
    INSERT INTO payments (payment_id, customer_id, amount_cents, currency, status)
    VALUES ($1, $2, $3, $4, 'notified')
    ON CONFLICT (payment_id) DO UPDATE SET status = 'notified', updated_at = now()
    WHERE payments.status <> 'notified'
)
INSERT INTO notifications (payment_id, customer_id, charge_id)
VALUES ($1, $2, $5)`

// AppendNotification implements Ledger.
func (l *PostgresLedger) AppendNotification(ctx context.Context, p Payment, chargeID string) error {
	_, err := l.conn(ctx).Exec(ctx, appendNotificationSQL, p.ID, p.CustomerID, p.AmountCents, p.Currency, chargeID)
	if err != nil {
		return fmt.Errorf("appending notification for payment %q: %w", p.ID, err)
	}
	return nil
}

const paymentSQL = `
SELECT p.status,
       (SELECT count(*) FROM charges c WHERE c.payment_id = p.payment_id),
       (SELECT count(*) FROM notifications n WHERE n.payment_id = p.payment_id)
FROM payments p
WHERE p.payment_id = $1`

// Payment implements Ledger.
func (l *PostgresLedger) Payment(ctx context.Context, id string) (PaymentState, error) {
	s := PaymentState{PaymentID: id}
	err := l.conn(ctx).QueryRow(ctx, paymentSQL, id).Scan(&s.Status, &s.Charges, &s.Notifications)
	if errors.Is(err, pgx.ErrNoRows) {
		return PaymentState{}, fmt.Errorf("reading payment %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return PaymentState{}, fmt.Errorf("reading payment %q: %w", id, err)
	}
	return s, nil
}

const summarySQL = `
SELECT (SELECT count(DISTINCT payment_id) FROM charges),
       (SELECT count(*) FROM charges),
       (SELECT count(*) FROM notifications)`

// Summary implements Ledger.
func (l *PostgresLedger) Summary(ctx context.Context) (Summary, error) {
	var s Summary
	if err := l.conn(ctx).QueryRow(ctx, summarySQL).Scan(&s.Payments, &s.Charges, &s.Notifications); err != nil {
		return Summary{}, fmt.Errorf("summarising ledger: %w", err)
	}
	return s, nil
}
