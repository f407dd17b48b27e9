package poison

import (
	"context"
	"errors"
	"time"
)

// Store keeps parked messages. Implementations: poison/memory, and the
// PostgreSQL and Redis ones beside the record stores; poisontest checks
// any of them. A Store is safe for concurrent use.
type Store interface {
	// Park keeps m under a new ID, which it returns. It returns ErrFull
	// when m does not fit the store's Limits; the caller leaves the
	// message unacknowledged and tries again later.
	Park(ctx context.Context, m Message) (string, error)
	// Get returns the message id names, ErrNotFound if none (never
	// parked, or past its retention).
	Get(ctx context.Context, id string) (Message, error)
	// List returns the messages f selects, newest first, at most f.Limit
	// of them (DefaultLimit when zero), and the cursor of the next page:
	// empty when there is none. The messages come without their payloads
	// (Payload nil), which a page of them would multiply: Get reads one
	// whole.
	List(ctx context.Context, f Filter) (messages []Message, next string, err error)
	// Settle marks the parked message id redriven or discarded (s.State)
	// by s.By at s.At, and returns it as settled. A message no longer
	// parked is left alone: ErrSettled, with the message as it is.
	Settle(ctx context.Context, id string, s Settlement) (Message, error)
	// Summary counts the parked messages by handler and class, ordered by
	// handler, then class.
	Summary(ctx context.Context) ([]Group, error)
}

// Filter selects parked messages. Its zero value selects every message in
// the Parked state.
type Filter struct {
	// Handler, Topic and Class, when set, select messages with that value.
	Handler string
	Topic   string
	Class   Class
	// State selects messages in that state; empty: Parked. All selects
	// every state.
	State State
	// Since and Until, when set, select messages parked at or after Since
	// and before Until.
	Since, Until time.Time
	// Limit is the most messages one List returns; zero: DefaultLimit.
	// At most MaxLimit.
	Limit int
	// After is the cursor List returned for the next page.
	After string
}

// All is the Filter State that selects every state.
const All State = "all"

// DefaultLimit and MaxLimit bound one page of List.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Matches reports whether f selects m, apart from its cursor and limit.
func (f Filter) Matches(m Message) bool {
	state := f.State
	if state == "" {
		state = Parked
	}
	return (f.Handler == "" || m.Handler == f.Handler) &&
		(f.Topic == "" || m.Topic == f.Topic) &&
		(f.Class == "" || m.Class == f.Class) &&
		(state == All || m.State == state) &&
		(f.Since.IsZero() || !m.ParkedAt.Before(f.Since)) &&
		(f.Until.IsZero() || m.ParkedAt.Before(f.Until))
}

// PageSize is f's Limit with its default and bound applied.
func (f Filter) PageSize() int {
	switch {
	case f.Limit <= 0:
		return DefaultLimit
	case f.Limit > MaxLimit:
		return MaxLimit
	}
	return f.Limit
}

// Settlement is how a parked message was settled.
type Settlement struct {
	// State is Redriven or Discarded.
	State State
	// By is the operator, as their admin key names them.
	By string
	// At is when.
	At time.Time
}

// Group counts the parked messages of one handler and class.
type Group struct {
	Handler string    `json:"handler"`
	Class   Class     `json:"class"`
	Count   int       `json:"count"`
	Oldest  time.Time `json:"oldest"`
	Newest  time.Time `json:"newest"`
}

// Limits bound a Store. A message parked longer ago than Retention is
// removed, whatever its state; until then it counts against MaxMessages
// and MaxBytes (Message.Size), settled or not, so that what was redriven
// can still be looked at.
type Limits struct {
	MaxMessages int
	MaxBytes    int64
	Retention   time.Duration
}

// DefaultLimits are the bounds of POISON_MAX_MESSAGES, POISON_MAX_BYTES
// and POISON_RETENTION by default.
var DefaultLimits = Limits{MaxMessages: 100_000, MaxBytes: 256 << 20, Retention: 14 * 24 * time.Hour}

// Validate reports a limit that is not positive.
func (l Limits) Validate() error {
	if l.MaxMessages <= 0 || l.MaxBytes <= 0 || l.Retention <= 0 {
		return errors.New("poison: every limit (messages, bytes, retention) must be positive")
	}
	return nil
}

// Errors of a Store.
var (
	ErrNotFound = errors.New("no parked message with this id: never parked, or past its retention")
	ErrSettled  = errors.New("the message is no longer parked")
	ErrFull     = errors.New("the poison store is full")
)
