// Package memory keeps the payments ledger, a [handlers.Ledger], in process
// memory: for development and tests, and for a service without DATABASE_URL.
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onceflow/onceflow/handlers"
)

// Ledger is a [handlers.Ledger] in process memory. It grows without bound
// and is lost on exit. The zero value is not usable; call NewLedger. It is
// safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	payments map[string]*payment
	charged  int64 // payments with at least one charge
	charges  int64
	notified int64 // notification rows
	receipts int64
}

type payment struct {
	handlers.Payment
	status        handlers.Status
	charges       int64
	notifications int64
	receipts      int64
	acceptedAt    time.Time
}

var _ handlers.Ledger = (*Ledger)(nil)

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger {
	return &Ledger{payments: make(map[string]*payment)}
}

// RecordPayment implements [handlers.Ledger].
func (l *Ledger) RecordPayment(ctx context.Context, p handlers.Payment) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.payments[p.ID]; ok {
		if old.Payment != p {
			return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, handlers.ErrConflict)
		}
		return old.acceptedAt, nil
	}
	now := time.Now().UTC()
	l.payments[p.ID] = &payment{Payment: p, status: handlers.StatusAccepted, acceptedAt: now}
	return now, nil
}

// AppendCharge implements [handlers.Ledger].
func (l *Ledger) AppendCharge(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "charge", p, func(mp *payment) {
		if mp.status == handlers.StatusAccepted {
			mp.status = handlers.StatusCharged
		}
		if mp.charges == 0 {
			l.charged++
		}
		mp.charges++
		l.charges++
	})
}

// AppendNotification implements [handlers.Ledger].
func (l *Ledger) AppendNotification(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "notification", p, func(mp *payment) {
		mp.status = handlers.StatusNotified
		mp.notifications++
		l.notified++
	})
}

// AppendReceipt implements [handlers.Ledger].
func (l *Ledger) AppendReceipt(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "receipt", p, func(mp *payment) {
		mp.receipts++
		l.receipts++
	})
}

// append adds the side effect what to the record of p under l.mu: it
// records p as charged if absent, then calls add.
func (l *Ledger) append(ctx context.Context, what string, p handlers.Payment, add func(*payment)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("appending %s for payment %q: %w", what, p.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	mp, ok := l.payments[p.ID]
	if !ok {
		mp = &payment{Payment: p, status: handlers.StatusCharged}
		l.payments[p.ID] = mp
	}
	add(mp)
	return nil
}

// Payment implements [handlers.Ledger].
func (l *Ledger) Payment(ctx context.Context, id string) (handlers.PaymentState, error) {
	if err := ctx.Err(); err != nil {
		return handlers.PaymentState{}, fmt.Errorf("reading payment %q: %w", id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	mp, ok := l.payments[id]
	if !ok {
		return handlers.PaymentState{}, fmt.Errorf("reading payment %q: %w", id, handlers.ErrNotFound)
	}
	return handlers.PaymentState{PaymentID: id, Status: mp.status, Charges: mp.charges,
		Notifications: mp.notifications, Receipts: mp.receipts}, nil
}

// Summary implements [handlers.Ledger].
func (l *Ledger) Summary(ctx context.Context) (handlers.Summary, error) {
	if err := ctx.Err(); err != nil {
		return handlers.Summary{}, fmt.Errorf("summarising ledger: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return handlers.Summary{Payments: l.charged, Charges: l.charges, Notifications: l.notified, Receipts: l.receipts}, nil
}
