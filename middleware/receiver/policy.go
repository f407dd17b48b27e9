package receiver

import "fmt"

// InProgressPolicy decides what Execute does when another owner holds an
// unexpired lease on the key.
type InProgressPolicy string

// In-progress policies.
const (
	// Reject returns ErrInProgress at once, so the transport redelivers
	// later (a message is nacked; an HTTP client gets 409).
	Reject InProgressPolicy = "reject"
	// Wait polls the store with backoff for up to Config.Wait, then acts on
	// what the key has become: completed (duplicate), free (run), or still
	// in progress (ErrInProgress).
	Wait InProgressPolicy = "wait"
)

// ParseInProgressPolicy parses "reject" or "wait". The error names the
// allowed values.
func ParseInProgressPolicy(s string) (InProgressPolicy, error) {
	switch p := InProgressPolicy(s); p {
	case Reject, Wait:
		return p, nil
	}
	return "", fmt.Errorf("invalid in-progress policy %q: allowed values are %q, %q", s, Reject, Wait)
}

// StoreErrorPolicy decides what Execute does when the store is unavailable
// at claim time.
type StoreErrorPolicy string

// Store-error policies.
const (
	// FailClosed returns the store error: the transport redelivers later,
	// nothing is lost and nothing is doubled.
	FailClosed StoreErrorPolicy = "fail-closed"
	// FailOpen runs the function without a record, trading the once
	// guarantee for availability. Each such run is logged and counted as
	// the fail_open outcome.
	FailOpen StoreErrorPolicy = "fail-open"
)

// ParseStoreErrorPolicy parses "fail-closed" or "fail-open". The error names
// the allowed values.
func ParseStoreErrorPolicy(s string) (StoreErrorPolicy, error) {
	switch p := StoreErrorPolicy(s); p {
	case FailClosed, FailOpen:
		return p, nil
	}
	return "", fmt.Errorf("invalid store error policy %q: allowed values are %q, %q", s, FailClosed, FailOpen)
}
