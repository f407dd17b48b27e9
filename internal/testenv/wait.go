package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond every 20ms until it holds, failing the test after
// limit.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
