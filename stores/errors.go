package stores

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors shared by every Store implementation. Implementations wrap
// them with context; test them with errors.Is.
var (
	// ErrLeaseLost means the token no longer owns the key: its lease ended,
	// another owner took the key over, or the record is gone.
	ErrLeaseLost = errors.New("lease lost")

	// ErrInvalidKey means the key cannot be used (it is empty).
	ErrInvalidKey = errors.New("invalid idempotency key")

	// ErrInvalidArgument means a lease or TTL is not positive, or a token is
	// empty.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrUnavailable means the backing store could not be reached or failed.
	// Errors matching it also wrap the driver's cause. The receiver's
	// store-error policy (fail-closed or fail-open) applies to exactly these.
	ErrUnavailable = errors.New("store unavailable")

	// ErrNotFound means a record is absent, or its lease or TTL has ended
	// ([Admin]), or it is no longer the record a Remove named.
	ErrNotFound = errors.New("record not found")

	// ErrClosed means the store was closed. Stores return it wrapped in an
	// UnavailableError, so it matches ErrUnavailable too.
	ErrClosed = errors.New("store closed")

	// ErrFull means a store with a capacity (stores/memory) holds as many
	// live records as it may: a Claim that would create a record is refused
	// and changes nothing. No store makes room by dropping a live record,
	// in progress or completed, since a forgotten completed record lets its
	// duplicate run again. A later Claim succeeds once records expire or
	// are released. It does not match ErrUnavailable: the store works, and
	// processing without a record (the receiver's fail-open policy) would
	// let whoever fills the store turn the guard off.
	ErrFull = errors.New("store full")
)

// FullError is how a store with a capacity refuses a Claim that would
// create a record beyond it. It matches [ErrFull] with [errors.Is] and
// says what is full and when room comes back, so that a caller can tell
// its own client when to retry.
type FullError struct {
	// Limit is what is reached, such as "100000 records".
	Limit string
	// Owner is set when it is the key owner's share of the store that is
	// reached (see stores/memory's Config.Owner), not the store: other
	// owners' Claims still create records.
	Owner bool
	// RoomIn is how long until the soonest of the records in the way
	// expires, or zero when not known. A Release makes room sooner.
	RoomIn time.Duration
}

func (e *FullError) Error() string {
	if e.Owner {
		return ErrFull.Error() + ": the key's owner holds its share, " + e.Limit
	}
	return ErrFull.Error() + ": " + e.Limit
}

// Is reports whether target is ErrFull.
func (e *FullError) Is(target error) bool { return target == ErrFull }

// UnavailableError reports that the backing store failed during Op. It
// matches [ErrUnavailable] with [errors.Is] and unwraps to the driver's
// cause. Its text is "store unavailable: " and the cause's: the store
// method that returns it names the operation and the key once, as in
// `claiming key "k": store unavailable: dial tcp ...`.
type UnavailableError struct {
	Op  string // the store operation: "claim", "complete", "release", "extend", "lookup", "remove"
	Err error  // the cause reported by the driver
}

// Unavailable wraps cause as an UnavailableError for op.
func Unavailable(op string, cause error) error {
	return &UnavailableError{Op: op, Err: cause}
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s: %v", ErrUnavailable, e.Err)
}

// Unwrap returns the driver's cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
