package provider

import (
	"context"
	"sync"
)

// book keeps the charges the provider made. Implementations are safe for
// concurrent use.
type book interface {
	// add records c. In transaction mode ctx carries the transaction
	// of c's Idempotency-Key record, which add joins.
	add(ctx context.Context, c Charge) error
	// count returns how many charges were made of paymentID, or of
	// every payment when it is "".
	count(ctx context.Context, paymentID string) (int64, error)
}

// memoryBook is a book in process memory: it holds counts, not charges.
type memoryBook struct {
	mu        sync.Mutex
	total     int64
	byPayment map[string]int64
}

func newMemoryBook() *memoryBook { return &memoryBook{byPayment: map[string]int64{}} }

func (b *memoryBook) add(ctx context.Context, c Charge) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total++
	b.byPayment[c.PaymentID]++
	return nil
}

func (b *memoryBook) count(_ context.Context, paymentID string) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if paymentID == "" {
		return b.total, nil
	}
	return b.byPayment[paymentID], nil
}
