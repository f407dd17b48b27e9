package bench

import (
	"fmt"
	"time"
)

// Size scales a plan: how many rounds, messages and seconds each
// measurement gets.
type Size string

// The sizes. Tiny only checks that every comparison runs and every target is
// judged (its figures are noise); short runs fewer, shorter rounds; full is the
// published run, a few minutes.
const (
	Tiny  Size = "tiny"
	Short Size = "short"
	Full  Size = "full"
)

// ParseSize returns the Size named s.
func ParseSize(s string) (Size, error) {
	switch z := Size(s); z {
	case Tiny, Short, Full:
		return z, nil
	}
	return "", fmt.Errorf("unknown size %q: want tiny, short or full", s)
}

// Params are the quantities a Size stands for.
type Params struct {
	// Rounds is how many interleaved rounds each comparison runs.
	Rounds int
	// RouterRounds is how many the memory-store router comparison runs
	// instead: its rounds take a fraction of a second, the least time of
	// any, and vary the most from one to the next, while two of its
	// contenders (the receiver and Watermill's Deduplicator) run level.
	RouterRounds int
	// Messages is how many unique messages a router round on the memory
	// store publishes; RemoteMessages is the same on Redis or PostgreSQL.
	Messages, RemoteMessages int
	// Window is how long a store-call round runs its callers.
	Window time.Duration
	// SweepWindow is how long one cell of a sweep runs.
	SweepWindow time.Duration
	// Payloads and Callers are the sweeps' axes.
	Payloads []int
	Callers  []int
}

// Params returns the quantities of z.
func (z Size) Params() Params {
	payloads := []int{64, 512, 4 << 10, 16 << 10, 64 << 10}
	callers := []int{1, 4, 16, 64, 256}
	switch z {
	case Tiny:
		return Params{Rounds: 2, RouterRounds: 2, Messages: 300, RemoteMessages: 100, Window: 100 * time.Millisecond,
			SweepWindow: 50 * time.Millisecond, Payloads: []int{64, 64 << 10}, Callers: []int{1, 16}}
	case Full:
		return Params{Rounds: 7, RouterRounds: 21, Messages: 30_000, RemoteMessages: 5_000, Window: 2 * time.Second,
			SweepWindow: time.Second, Payloads: payloads, Callers: callers}
	default:
		return Params{Rounds: 5, RouterRounds: 15, Messages: 10_000, RemoteMessages: 2_000, Window: 500 * time.Millisecond,
			SweepWindow: 300 * time.Millisecond, Payloads: payloads, Callers: callers}
	}
}
