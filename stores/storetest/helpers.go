package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// Durations the suite uses. Short leases keep it fast; checks that a lease is
// still live run well inside long ones, so a slow machine cannot flake them.
const (
	shortLease = 300 * time.Millisecond
	longLease  = 30 * time.Second
	longTTL    = time.Hour
	// clockSlack bounds the difference between the store's clock and the
	// test's, plus round-trip time, for timestamp checks.
	clockSlack = 2 * time.Second
	// eventually bounds how long the suite waits for an expiry to be observed.
	eventually = 10 * time.Second
)

var fingerprint = []byte("fingerprint-1")

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// key returns a key unique to the test, so cases can share a backend.
func key(t *testing.T, suffix string) string {
	return t.Name() + ":" + suffix
}

func mustClaim(t *testing.T, s stores.Store, key string, fp []byte, lease time.Duration) stores.Claim {
	t.Helper()
	c, err := s.Claim(ctx(t), key, fp, lease)
	if err != nil {
		t.Fatalf("Claim(%q): %v", short(key), err)
	}
	return c
}

func mustAcquire(t *testing.T, s stores.Store, key string, lease time.Duration) stores.Claim {
	t.Helper()
	c := mustClaim(t, s, key, fingerprint, lease)
	if c.Status != stores.Acquired {
		t.Fatalf("Claim(%q) = %v, want acquired", short(key), c.Status)
	}
	if c.Token == "" {
		t.Fatalf("Claim(%q) acquired with an empty token", short(key))
	}
	return c
}

func mustComplete(t *testing.T, s stores.Store, key string, token stores.Token, result []byte) {
	t.Helper()
	if err := s.Complete(ctx(t), key, token, result, longTTL); err != nil {
		t.Fatalf("Complete(%q): %v", short(key), err)
	}
}

func wantStatus(t *testing.T, c stores.Claim, want stores.Status) {
	t.Helper()
	if c.Status != want {
		t.Fatalf("claim status = %v, want %v", c.Status, want)
	}
}

func wantErr(t *testing.T, op string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s error = %v, want %v", op, err, target)
	}
}

// waitForAcquire claims key until it is acquired, failing after eventually.
// It returns the claim and how many claims saw the old state first.
func waitForAcquire(t *testing.T, s stores.Store, key string, lease time.Duration) stores.Claim {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		c := mustClaim(t, s, key, fingerprint, lease)
		if c.Status == stores.Acquired {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %q still %v after %v", short(key), c.Status, eventually)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func wantNear(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d > clockSlack || d < -clockSlack {
		t.Fatalf("%s = %v, want within %v of %v", what, got, clockSlack, want)
	}
}

func wantBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs: got %d bytes %q, want %d bytes %q", what, len(got), short(string(got)), len(want), short(string(want)))
	}
}

// short abbreviates long keys and values in failure messages.
func short(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:61] + "..."
}
