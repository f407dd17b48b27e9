package handlers

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemoryLedger is a Ledger in process memory, for development and tests. It
// grows without bound and is lost on exit. The zero value is not usable; call
// NewMemoryLedger. It is safe for concurrent use.
type MemoryLedger struct {
	mu       sync.Mutex
	payments map[string]*memoryPayment
	charged  int64 // payments with at least one charge
	charges  int64
	notified int64 // notification rows
}

type memoryPayment struct {
	Payment
	status        Status
	charges       int64
	notifications int64
	acceptedAt    time.Time
}

var _ Ledger = (*MemoryLedger)(nil)

// NewMemoryLedger returns an empty MemoryLedger.
func NewMemoryLedger() *MemoryLedger {
	return &MemoryLedger{payments: make(map[string]*memoryPayment)}
}

// RecordPayment implements Ledger.
func (l *MemoryLedger) RecordPayment(ctx context.Context, p Payment) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.payments[p.ID]; ok {
		if old.Payment != p {
			return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, ErrConflict)
		}
		return old.acceptedAt, nil
	}
	now := time.Now().UTC()
	l.payments[p.ID] = &memoryPayment{Payment: p, status: StatusAccepted, acceptedAt: now}
	return now, nil
}

// AppendCharge implements Ledger.
func (l *MemoryLedger) AppendCharge(ctx context.Context, p Payment, chargeID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("appending charge for payment %q: %w", p.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	mp := l.payment(p, StatusCharged)
	if mp.status == StatusAccepted {
		mp.status = StatusCharged
	}
	if mp.charges == 0 {
		l.charged++
	}
	mp.charges++
	l.charges++
	return nil
}

// AppendNotification implements Ledger.
func (l *MemoryLedger) AppendNotification(ctx context.Context, p Payment, chargeID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("appending notification for payment %q: %w", p.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	mp := l.payment(p, StatusNotified)
	mp.status = StatusNotified
	mp.notifications++
	l.notified++
	return nil
}

// payment returns the record of p, creating it with status if absent. The
// caller holds l.mu.
func (l *MemoryLedger) payment(p Payment, status Status) *memoryPayment {
	mp, ok := l.payments[p.ID]
	if !ok {
		mp = &memoryPayment{Payment: p, status: status}
		l.payments[p.ID] = mp
	}
	return mp
}

// Payment implements Ledger.
func (l *MemoryLedger) Payment(ctx context.Context, id string) (PaymentState, error) {
	if err := ctx.Err(); err != nil {
		return PaymentState{}, fmt.Errorf("reading payment %q: %w", id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	mp, ok := l.payments[id]
	if !ok {
		return PaymentState{}, fmt.Errorf("reading payment %q: %w", id, ErrNotFound)
	}
	return PaymentState{PaymentID: id, Status: mp.status, Charges: mp.charges, Notifications: mp.notifications}, nil
}

// Summary implements Ledger.
func (l *MemoryLedger) Summary(ctx context.Context) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, fmt.Errorf("summarising ledger: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return Summary{Payments: l.charged, Charges: l.charges, Notifications: l.notified}, nil
}
