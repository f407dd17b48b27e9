package middleware

import (
	"context"
	"errors"
	"testing"
	"time"
)

type detachedTestKey struct{}

// The context of the finishing store calls keeps the caller's values, not
// its cancellation or cause, and ends at its own deadline, whether a store
// waits on Done or only checks Err.
func TestDetachedContext(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), detachedTestKey{}, "v"))
	cancel(errors.New("caller gave up"))

	var waited, polled detachedCtx
	waited.init(parent, 50*time.Millisecond)
	polled.init(parent, 50*time.Millisecond)
	defer waited.stop()
	defer polled.stop()

	if waited.Err() != nil || context.Cause(&waited) != nil {
		t.Fatalf("detached context ended with its parent: %v, cause %v", waited.Err(), context.Cause(&waited))
	}
	if got := waited.Value(detachedTestKey{}); got != "v" {
		t.Fatalf("Value = %v, want the parent's value", got)
	}
	if d, ok := waited.Deadline(); !ok || time.Until(d) > 50*time.Millisecond {
		t.Fatalf("Deadline = %v, %v; want within 50ms", d, ok)
	}
	select {
	case <-waited.Done():
	case <-time.After(waitTimeout):
		t.Fatal("Done not closed at the deadline")
	}
	if !errors.Is(waited.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after Done = %v, want DeadlineExceeded", waited.Err())
	}

	// A store that only polls starts the deadline with its first Err.
	if err := polled.Err(); err != nil {
		t.Fatalf("Err at the start of the call = %v, want nil", err)
	}
	time.Sleep(time.Until(polled.deadline))
	if !errors.Is(polled.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline = %v, want DeadlineExceeded", polled.Err())
	}
	select {
	case <-polled.Done():
	default:
		t.Fatal("Done asked after the deadline is not closed")
	}
}

// A derived context is cancelled when the detached one reaches its deadline.
func TestDetachedContextPropagates(t *testing.T) {
	var dc detachedCtx
	dc.init(context.Background(), 20*time.Millisecond)
	defer dc.stop()
	child, cancel := context.WithCancel(&dc)
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(waitTimeout):
		t.Fatal("child not cancelled at the detached context's deadline")
	}
}
