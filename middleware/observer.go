package middleware

import "time"

// Observer is told how every Execute call ends and how long every store
// call takes. Implementations must be safe for concurrent use and fast: they
// are called on the message path.
type Observer interface {
	// Outcome records that one Execute call in scope ended in o.
	Outcome(scope string, o Outcome)
	// StoreLatency records the duration of one store call; op is "claim",
	// "complete", "release" or "extend".
	StoreLatency(op string, d time.Duration)
}

type nopObserver struct{}

func (nopObserver) Outcome(string, Outcome)            {}
func (nopObserver) StoreLatency(string, time.Duration) {}
