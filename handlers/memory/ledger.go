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

// Ledger is a [handlers.Ledger] in process memory. It grows without bound,
// the effect keys of its rows too, and is lost on exit. The zero value is
// not usable; call NewLedger. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	payments map[paymentKey]*payment
	// summaries counts each client's payments: Payments those with at
	// least one charge, the rest rows.
	summaries map[string]*handlers.Summary
	// effects holds the effect keys of the rows appended in receivers'
	// runs ([handlers.LedgerEffectKey]); the key's name tells the kinds
	// apart.
	effects map[string]struct{}
}

// paymentKey names a payment: ids are per client.
type paymentKey struct{ client, id string }

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
	return &Ledger{
		payments:  make(map[paymentKey]*payment),
		summaries: make(map[string]*handlers.Summary),
		effects:   make(map[string]struct{}),
	}
}

// RecordPayment implements [handlers.Ledger].
func (l *Ledger) RecordPayment(ctx context.Context, p handlers.Payment) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := paymentKey{p.Client, p.ID}
	if old, ok := l.payments[k]; ok {
		if old.Payment != p {
			return time.Time{}, fmt.Errorf("recording payment %q: %w", p.ID, handlers.ErrConflict)
		}
		return old.acceptedAt, nil
	}
	now := time.Now().UTC()
	l.payments[k] = &payment{Payment: p, status: handlers.StatusAccepted, acceptedAt: now}
	return now, nil
}

// AppendCharge implements [handlers.Ledger].
func (l *Ledger) AppendCharge(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "charge", p, func(mp *payment, s *handlers.Summary) {
		if mp.status == handlers.StatusAccepted {
			mp.status = handlers.StatusCharged
		}
		if mp.charges == 0 {
			s.Payments++
		}
		mp.charges++
		s.Charges++
	})
}

// AppendNotification implements [handlers.Ledger].
func (l *Ledger) AppendNotification(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "notification", p, func(mp *payment, s *handlers.Summary) {
		mp.status = handlers.StatusNotified
		mp.notifications++
		s.Notifications++
	})
}

// AppendReceipt implements [handlers.Ledger].
func (l *Ledger) AppendReceipt(ctx context.Context, p handlers.Payment, chargeID string) error {
	return l.append(ctx, "receipt", p, func(mp *payment, s *handlers.Summary) {
		mp.receipts++
		s.Receipts++
	})
}

// append adds the side effect what to the record of p under l.mu: it
// records p as charged if absent, then calls add with the record and its
// client's summary. A repeat of a run's effect key does nothing: the first
// append of the key recorded the payment and advanced its status already.
func (l *Ledger) append(ctx context.Context, what string, p handlers.Payment, add func(*payment, *handlers.Summary)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("appending %s for payment %q: %w", what, p.ID, err)
	}
	key, keyed := handlers.LedgerEffectKey(ctx, what)
	l.mu.Lock()
	defer l.mu.Unlock()
	if keyed {
		if _, repeat := l.effects[key]; repeat {
			return nil
		}
		l.effects[key] = struct{}{}
	}
	k := paymentKey{p.Client, p.ID}
	mp, ok := l.payments[k]
	if !ok {
		mp = &payment{Payment: p, status: handlers.StatusCharged, acceptedAt: time.Now().UTC()}
		l.payments[k] = mp
	}
	s, ok := l.summaries[p.Client]
	if !ok {
		s = new(handlers.Summary)
		l.summaries[p.Client] = s
	}
	add(mp, s)
	return nil
}

// Payment implements [handlers.Ledger].
func (l *Ledger) Payment(ctx context.Context, client, id string) (handlers.PaymentState, error) {
	if err := ctx.Err(); err != nil {
		return handlers.PaymentState{}, fmt.Errorf("reading payment %q: %w", id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	mp, ok := l.payments[paymentKey{client, id}]
	if !ok {
		return handlers.PaymentState{}, fmt.Errorf("reading payment %q: %w", id, handlers.ErrNotFound)
	}
	return handlers.PaymentState{PaymentID: id, Status: mp.status, Charges: mp.charges,
		Notifications: mp.notifications, Receipts: mp.receipts}, nil
}

// Summary implements [handlers.Ledger].
func (l *Ledger) Summary(ctx context.Context, client string) (handlers.Summary, error) {
	if err := ctx.Err(); err != nil {
		return handlers.Summary{}, fmt.Errorf("summarising ledger: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.summaries[client]; ok {
		return *s, nil
	}
	return handlers.Summary{}, nil
}
