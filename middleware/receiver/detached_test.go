package receiver

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type detachedTestKey struct{}

// The context of the finishing store calls keeps the caller's values, not
// its cancellation or cause, and ends at its own deadline, whether a store
// waits on Done or only checks Err.
func TestDetachedContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 50 * time.Millisecond
		parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), detachedTestKey{}, "v"))
		cancel(errors.New("caller gave up"))

		var waited, polled detachedCtx
		waited.init(parent, d)
		polled.init(parent, d)
		defer waited.stop()
		defer polled.stop()

		if waited.Err() != nil || context.Cause(&waited) != nil {
			t.Fatalf("detached context ended with its parent: %v, cause %v", waited.Err(), context.Cause(&waited))
		}
		if got := waited.Value(detachedTestKey{}); got != "v" {
			t.Fatalf("Value = %v, want the parent's value", got)
		}
		start := time.Now()
		if dl, ok := waited.Deadline(); !ok || !dl.Equal(start.Add(d)) {
			t.Fatalf("Deadline = %v, %v; want %v", dl, ok, start.Add(d))
		}
		<-waited.Done()
		if waitedFor := time.Since(start); waitedFor != d {
			t.Fatalf("Done closed after %v, want %v", waitedFor, d)
		}
		if !errors.Is(waited.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after Done = %v, want DeadlineExceeded", waited.Err())
		}
		if got := waited.Value(detachedTestKey{}); got != "v" {
			t.Fatalf("Value once Done was asked = %v, want the parent's value", got)
		}

		// A store that only polls starts the deadline with its first Err.
		if err := polled.Err(); err != nil {
			t.Fatalf("Err at the start of the call = %v, want nil", err)
		}
		time.Sleep(d)
		if !errors.Is(polled.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline = %v, want DeadlineExceeded", polled.Err())
		}
		select {
		case <-polled.Done():
		default:
			t.Fatal("Done asked after the deadline is not closed")
		}
	})
}

// A context derived from the detached one is registered with it as with a
// standard context (no goroutine watches it): it ends at the detached
// context's deadline, and at once when the store call's context is
// stopped.
func TestDetachedContextPropagates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 20 * time.Millisecond
		var dc detachedCtx
		dc.init(context.Background(), d)
		defer dc.stop()
		child, cancel := context.WithCancel(&dc)
		defer cancel()
		start := time.Now()
		<-child.Done()
		if waited := time.Since(start); waited != d {
			t.Fatalf("child cancelled after %v, want at the detached context's deadline, %v", waited, d)
		}

		var stopped detachedCtx
		stopped.init(context.Background(), time.Hour)
		child, cancel = context.WithCancel(&stopped)
		defer cancel()
		stopped.stop()
		select {
		case <-child.Done():
		default:
			t.Fatal("a derived context is not ended by stop at once: something else watches the detached context")
		}
	})
}
