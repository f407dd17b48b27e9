package testdomain

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// MemoryLedger is a [Ledger] in process memory, for a service without a
// database. It grows without bound and is lost on exit.
type MemoryLedger struct {
	mu sync.Mutex
	// rows counts the rows of each kind by id.
	rows map[Kind]map[string]int64
	// keys holds the effect keys of the rows added in runs.
	keys map[string]bool
}

var _ Ledger = (*MemoryLedger)(nil)

// NewMemoryLedger returns an empty MemoryLedger.
func NewMemoryLedger() *MemoryLedger {
	return &MemoryLedger{rows: map[Kind]map[string]int64{}, keys: map[string]bool{}}
}

// Add implements [Ledger].
func (l *MemoryLedger) Add(ctx context.Context, kind Kind, id string) error {
	if (&Tally{}).of(kind) == nil {
		return fmt.Errorf("adding a row of %q: unknown kind %q", id, kind)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("adding a %s row of %q: %w", kind, id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if key, ok := rowKey(ctx, kind); ok {
		if l.keys[key] {
			return nil
		}
		l.keys[key] = true
	}
	if l.rows[kind] == nil {
		l.rows[kind] = map[string]int64{}
	}
	l.rows[kind][id]++
	return nil
}

// Tally implements [Ledger].
func (l *MemoryLedger) Tally(_ context.Context, prefix string) (Tally, error) {
	return l.tally(func(id string) bool { return strings.HasPrefix(id, prefix) }), nil
}

// TallyOf implements [Ledger].
func (l *MemoryLedger) TallyOf(_ context.Context, id string) (Tally, error) {
	return l.tally(func(other string) bool { return other == id }), nil
}

// tally counts the rows whose id matches.
func (l *MemoryLedger) tally(match func(id string) bool) Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t Tally
	for kind, ids := range l.rows {
		c := t.of(kind)
		for id, n := range ids {
			if match(id) {
				c.Rows += n
				c.IDs++
			}
		}
	}
	return t
}
