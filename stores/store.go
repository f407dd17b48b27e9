// Package stores defines the idempotency record store: the contract that the
// idempotent receiver (package receiver) relies on and that every
// implementation (stores/memory, stores/redis, stores/postgres) fulfils,
// and [Admin], what operators' tools need besides (reading a record,
// removing one whoever owns it), which each implements too.
//
// A record per key moves through four states:
//
//	absent ──Claim──▶ in progress ──Complete──▶ completed ──TTL──▶ expired (absent)
//	                     │  ▲   │
//	                     │  └───┘ Extend (heartbeat)
//	                     └──Release / lease ends──▶ absent
//
// An in-progress record is leased to exactly one owner, identified by a
// fencing token that the store issues on Claim. Every later write (Complete,
// Release, Extend) is conditional on that token, so an owner whose lease ended
// and was taken over can no longer change the record: it gets ErrLeaseLost.
//
// Guarantees every implementation gives, and stores/storetest checks:
//   - Each method is one atomic operation against the backing store (one
//     command or Lua script on one key in Redis, one SQL statement in
//     PostgreSQL): there is no check-then-set window between callers.
//   - Among any number of concurrent Claims of an absent key, exactly one
//     returns Acquired.
//   - Leases and TTLs are judged by the store's clock, never the caller's.
//   - Fingerprints and results round-trip byte for byte, including empty and
//     large (1 MiB) results.
//   - Keys of any length are accepted; keys too long for the backend are
//     hashed (see StorageKey), never truncated. The empty key is rejected with
//     ErrInvalidKey.
//   - A live record, in progress or completed, is never dropped to make
//     room. A store with a capacity refuses a Claim that would create a
//     record beyond it with ErrFull, and answers Claims of the records it
//     holds as ever.
//   - Calls are safe to retry. A client library that resends a call whose
//     reply it lost (go-redis does, by default) gets what the first attempt
//     would have returned: a Claim its own acquisition, not InProgress; a
//     Complete, Release or Extend its success, changing nothing more. That
//     holds while the lease the first attempt took, extended or released
//     would have lasted (for Complete, until the record expires). A second
//     call, as opposed to a resent one, gets the answer it always got, but
//     for Complete (see there).
//   - A backend that cannot be reached yields an error matching ErrUnavailable
//     that also wraps the driver's cause. A context already done when the
//     call starts yields an error matching the context's error and changes
//     nothing; one cancelled while the call is in flight yields the same
//     error, but the backend may or may not have applied the operation, so
//     callers treat it as unknown, as they do an outage.
package stores

import (
	"context"
	"time"
)

// Store keeps idempotency records. Implementations are safe for concurrent
// use by multiple goroutines and, for networked backends, by multiple
// processes sharing the same backend.
type Store interface {
	// Claim tries to take ownership of key for lease.
	//
	// It returns Acquired with a fresh token when the key is absent, when its
	// completed record has expired, or when its in-progress record's lease has
	// ended (takeover: how a crashed worker's claim is recovered). It returns
	// Completed with the stored record, or InProgress with the current
	// owner's fingerprint and lease end. fingerprint is stored with the claim
	// so that callers can detect a key reused for a different payload.
	Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (Claim, error)

	// Complete stores result for key and makes the record completed for ttl.
	// Only the owner of token may complete; anyone else gets ErrLeaseLost,
	// including an owner whose lease ended (whether or not it was taken over).
	// Completing again with the same token and result, while the completed
	// record lives, succeeds and changes nothing (its expiry included), so a
	// Complete whose outcome is unknown may be sent again; with another
	// result it gets ErrLeaseLost.
	Complete(ctx context.Context, key string, token Token, result []byte, ttl time.Duration) error

	// Release deletes the in-progress record owned by token so that a retry
	// can claim the key at once. It is used when the handler fails. A token
	// that no longer owns the key gets ErrLeaseLost and changes nothing.
	Release(ctx context.Context, key string, token Token) error

	// Extend moves the lease end of the record owned by token to lease from
	// now (store clock) and returns the new lease end. It is the heartbeat of
	// long-running handlers. A token that no longer owns the key gets
	// ErrLeaseLost.
	Extend(ctx context.Context, key string, token Token, lease time.Duration) (time.Time, error)
}

// Status is the outcome of a Claim.
type Status int

// Claim outcomes.
const (
	// Acquired: the caller owns the key until its lease ends.
	Acquired Status = iota + 1
	// Completed: the key was already processed; Claim.Record holds the result.
	Completed
	// InProgress: another owner holds an unexpired lease on the key.
	InProgress
)

// String returns the lower-case name used in logs and metrics.
func (s Status) String() string {
	switch s {
	case Acquired:
		return "acquired"
	case Completed:
		return "completed"
	case InProgress:
		return "in_progress"
	default:
		return "unknown"
	}
}

// Token identifies one acquisition of a key. It is issued by the store on
// Claim (the networked stores draw it before the call, so that a resent
// Claim knows its own acquisition), is unique across acquisitions (128 random
// bits), and fences every later write: only the current owner's token is
// accepted.
type Token string

// Claim is the result of Store.Claim.
type Claim struct {
	// Status says which of the three outcomes this is.
	Status Status
	// Token is the owner's fencing token. Set only when Status is Acquired.
	Token Token
	// LeaseUntil is the end of the caller's lease (Acquired) or of the
	// current owner's lease (InProgress), as the owner was told it. The
	// store's clock decides: the lease lasts at least until LeaseUntil,
	// and at most the lease from the Claim's return (a store may read the
	// time before the call takes effect: Redis reads the client's as it
	// sends the Claim). An InProgress Claim reports the end the owner was
	// told, even once it passed, while the store still holds the lease.
	LeaseUntil time.Time
	// Record is the stored record when Status is Completed. When Status is
	// InProgress only Record.Fingerprint and Record.CreatedAt are set.
	Record Record
}

// Record is what a store keeps about a key.
type Record struct {
	// Fingerprint is the fingerprint given to the Claim that created the
	// record (for example the SHA-256 of the payload).
	Fingerprint []byte
	// Result is what Complete stored. Empty until completed.
	Result []byte
	// CreatedAt is when the current owner claimed the key.
	CreatedAt time.Time
	// CompletedAt is when Complete was called. Zero until completed.
	CompletedAt time.Time
	// ExpiresAt is when the completed record will be forgotten.
	ExpiresAt time.Time
}
