package receivertest

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// Recorder is a [receiver.Observer] that counts what it is told and lets a
// test wait for a condition on the counts without sleeping.
type Recorder struct {
	mu       sync.Mutex
	outcomes map[receiver.Outcome]int
	ops      map[string]int
	extends  map[receiver.Extension]int
	replayed int           // messages
	changed  chan struct{} // signalled after every observation
}

var _ receiver.Observer = (*Recorder)(nil)

// NewRecorder is a Recorder that has counted nothing.
func NewRecorder() *Recorder {
	return &Recorder{outcomes: map[receiver.Outcome]int{}, ops: map[string]int{}, extends: map[receiver.Extension]int{},
		changed: make(chan struct{}, 1)}
}

// Outcome counts o.
func (r *Recorder) Outcome(_ string, o receiver.Outcome) {
	r.mu.Lock()
	r.outcomes[o]++
	r.mu.Unlock()
	r.signal()
}

// StoreLatency counts a call of op.
func (r *Recorder) StoreLatency(op string, _ time.Duration) {
	r.mu.Lock()
	r.ops[op]++
	r.mu.Unlock()
	r.signal()
}

// LeaseExtension counts e.
func (r *Recorder) LeaseExtension(_ string, e receiver.Extension) {
	r.mu.Lock()
	r.extends[e]++
	r.mu.Unlock()
	r.signal()
}

// Replayed counts n replayed messages.
func (r *Recorder) Replayed(_ string, n int) {
	r.mu.Lock()
	r.replayed += n
	r.mu.Unlock()
	r.signal()
}

func (r *Recorder) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Count is how many calls ended in o.
func (r *Recorder) Count(o receiver.Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[o]
}

// Total is how many calls ended in any outcome.
func (r *Recorder) Total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.outcomes {
		n += c
	}
	return n
}

// Outcomes is every count by outcome, for a failure's message.
func (r *Recorder) Outcomes() map[receiver.Outcome]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.outcomes)
}

// OpCount is how many store calls of op were timed.
func (r *Recorder) OpCount(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ops[op]
}

// Ops is every count of store calls by op, for a failure's message.
func (r *Recorder) Ops() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.ops)
}

// Extensions is how many extensions of a lease ended in e.
func (r *Recorder) Extensions(e receiver.Extension) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.extends[e]
}

// Replays is how many stored messages duplicates replayed.
func (r *Recorder) Replays() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replayed
}

// Await blocks until cond holds, re-checking after every observation.
func (r *Recorder) Await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(WaitTimeout)
	for !cond() {
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
