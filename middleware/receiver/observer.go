package receiver

import "time"

// Observer is told how every Execute call ends, how long every store call
// takes, how every heartbeat's extension of a lease ends, and how many
// stored messages every duplicate replays. Implementations must be safe for
// concurrent use and fast: they are called on the message path.
type Observer interface {
	// Outcome records that one Execute call in scope ended in o.
	Outcome(scope string, o Outcome)
	// StoreLatency records the duration of one store call; op is "claim",
	// "complete", "release" or "extend".
	StoreLatency(op string, d time.Duration)
	// LeaseExtension records how one extension of a lease in scope by the
	// heartbeat ended. Extensions cut short by the end of the function are
	// not reported.
	LeaseExtension(scope string, e Extension)
	// Replayed records that a duplicate in scope handed n stored messages
	// back for publishing again (the Watermill face; n may be 0).
	Replayed(scope string, n int)
}

// Extension is how one heartbeat's extension of a lease ended. It is the
// result label of the onceflow_lease_extensions_total metric.
type Extension string

// Extensions of a lease.
const (
	// ExtensionExtended: the lease now ends Lease after the call.
	ExtensionExtended Extension = "extended"
	// ExtensionLost: the store says the token no longer owns the key (the
	// lease ended, and another owner may have taken the key over); the
	// function's context is cancelled with [stores.ErrLeaseLost].
	ExtensionLost Extension = "lost"
	// ExtensionFailed: the store call failed; the heartbeat tries again at
	// its next beat, or fences the function off once the lease has run out.
	ExtensionFailed Extension = "failed"
)

// Extensions lists every Extension, for pre-initialising metrics.
func Extensions() []Extension {
	all := extensionOrder
	return all[:]
}

// extensionOrder is every Extension, in the order Extensions returns them.
var extensionOrder = [...]Extension{ExtensionExtended, ExtensionLost, ExtensionFailed}

type nopObserver struct{}

func (nopObserver) Outcome(string, Outcome)            {}
func (nopObserver) StoreLatency(string, time.Duration) {}
func (nopObserver) LeaseExtension(string, Extension)   {}
func (nopObserver) Replayed(string, int)               {}
