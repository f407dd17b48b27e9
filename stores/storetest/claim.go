package storetest

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

func testClaimAbsentAcquires(t *testing.T, h Harness) {
	s := h.New(t)
	before := time.Now()
	c := mustAcquire(t, s, key(t, "k"), longLease)
	wantNear(t, "LeaseUntil", c.LeaseUntil, before.Add(longLease))

	other := mustAcquire(t, s, key(t, "other"), longLease)
	if other.Token == c.Token {
		t.Fatalf("two acquisitions share token %q", c.Token)
	}
}

func testClaimHeldIsInProgress(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	first := mustAcquire(t, s, k, longLease)

	c := mustClaim(t, s, k, []byte("another payload"), longLease)
	wantStatus(t, c, stores.InProgress)
	if c.Token != "" {
		t.Fatalf("in-progress claim carries a token %q; only the owner may hold one", c.Token)
	}
	wantNear(t, "LeaseUntil", c.LeaseUntil, first.LeaseUntil)
	wantBytes(t, "in-progress fingerprint", c.Record.Fingerprint, fingerprint)
	if c.Record.CreatedAt.IsZero() {
		t.Fatal("in-progress record has no CreatedAt")
	}
}

func testClaimCompletedReturnsRecord(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	first := mustAcquire(t, s, k, longLease)
	before := time.Now()
	mustComplete(t, s, k, first.Token, []byte("result-1"))

	c := mustClaim(t, s, k, fingerprint, longLease)
	wantStatus(t, c, stores.Completed)
	if c.Token != "" {
		t.Fatalf("completed claim carries a token %q", c.Token)
	}
	wantBytes(t, "result", c.Record.Result, []byte("result-1"))
	wantBytes(t, "fingerprint", c.Record.Fingerprint, fingerprint)
	wantNear(t, "CompletedAt", c.Record.CompletedAt, before)
	wantNear(t, "ExpiresAt", c.Record.ExpiresAt, before.Add(longTTL))
	if c.Record.CreatedAt.After(c.Record.CompletedAt) {
		t.Fatalf("CreatedAt %v after CompletedAt %v", c.Record.CreatedAt, c.Record.CompletedAt)
	}

	// A completed record answers every later claim the same way, whatever
	// fingerprint is offered: detecting misuse is the caller's job.
	again := mustClaim(t, s, k, []byte("different"), longLease)
	wantStatus(t, again, stores.Completed)
	wantBytes(t, "fingerprint after a different claim", again.Record.Fingerprint, fingerprint)
}

func testKeysAreIndependent(t *testing.T, h Harness) {
	s := h.New(t)
	a := mustAcquire(t, s, key(t, "a"), longLease)
	mustComplete(t, s, key(t, "a"), a.Token, []byte("a"))
	b := mustAcquire(t, s, key(t, "b"), longLease)
	if err := s.Release(ctx(t), key(t, "b"), b.Token); err != nil {
		t.Fatalf("Release(b): %v", err)
	}
	wantStatus(t, mustClaim(t, s, key(t, "a"), fingerprint, longLease), stores.Completed)
	wantStatus(t, mustClaim(t, s, key(t, "b"), fingerprint, longLease), stores.Acquired)
}
