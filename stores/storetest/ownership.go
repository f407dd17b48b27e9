package storetest

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

func testWrongTokenIsLeaseLost(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)
	intruder := stores.NewToken()

	wantErr(t, "Complete with a wrong token", s.Complete(ctx(t), k, intruder, []byte("x"), longTTL), stores.ErrLeaseLost)
	wantErr(t, "Release with a wrong token", s.Release(ctx(t), k, intruder), stores.ErrLeaseLost)
	_, err := s.Extend(ctx(t), k, intruder, longLease)
	wantErr(t, "Extend with a wrong token", err, stores.ErrLeaseLost)

	// None of it changed the owner's claim.
	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.InProgress)
	mustComplete(t, s, k, owner.Token, []byte("owner"))

	// A token for a key that was never claimed owns nothing either.
	never := key(t, "never-claimed")
	wantErr(t, "Complete of an absent key", s.Complete(ctx(t), never, intruder, nil, longTTL), stores.ErrLeaseLost)
	wantErr(t, "Release of an absent key", s.Release(ctx(t), never, intruder), stores.ErrLeaseLost)
	_, err = s.Extend(ctx(t), never, intruder, longLease)
	wantErr(t, "Extend of an absent key", err, stores.ErrLeaseLost)
}

func testReleaseFreesKeyAtOnce(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	first := mustAcquire(t, s, k, longLease)
	if err := s.Release(ctx(t), k, first.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}

	second := mustAcquire(t, s, k, longLease)
	if second.Token == first.Token {
		t.Fatal("re-acquisition after Release reused the old token")
	}
	// The released owner is fenced off from the new owner's claim.
	wantErr(t, "Complete by the released owner", s.Complete(ctx(t), k, first.Token, []byte("stale"), longTTL), stores.ErrLeaseLost)
	wantErr(t, "second Release by the released owner", s.Release(ctx(t), k, first.Token), stores.ErrLeaseLost)
	mustComplete(t, s, k, second.Token, []byte("fresh"))
	c := mustClaim(t, s, k, fingerprint, longLease)
	wantBytes(t, "result", c.Record.Result, []byte("fresh"))
}

func testCompleteIsFinal(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)
	mustComplete(t, s, k, owner.Token, []byte("first"))

	wantErr(t, "second Complete", s.Complete(ctx(t), k, owner.Token, []byte("second"), longTTL), stores.ErrLeaseLost)
	wantErr(t, "Release after Complete", s.Release(ctx(t), k, owner.Token), stores.ErrLeaseLost)
	_, err := s.Extend(ctx(t), k, owner.Token, longLease)
	wantErr(t, "Extend after Complete", err, stores.ErrLeaseLost)

	c := mustClaim(t, s, k, fingerprint, longLease)
	wantStatus(t, c, stores.Completed)
	wantBytes(t, "result", c.Record.Result, []byte("first"))
}

// testCompleteAgainSucceeds: the owner completing again with the same
// result succeeds and changes nothing, so a Complete whose reply was lost
// can be sent again; calls in a batch, and nil and empty results, alike.
func testCompleteAgainSucceeds(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)
	mustComplete(t, s, k, owner.Token, []byte("result"))
	before := mustClaim(t, s, k, fingerprint, longLease)
	time.Sleep(10 * time.Millisecond) // the store's clock moves on
	if err := s.Complete(ctx(t), k, owner.Token, []byte("result"), 2*longTTL); err != nil {
		t.Fatalf("Complete again: %v", err)
	}
	after := mustClaim(t, s, k, fingerprint, longLease)
	wantStatus(t, after, stores.Completed)
	wantBytes(t, "result", after.Record.Result, []byte("result"))
	if !after.Record.CompletedAt.Equal(before.Record.CompletedAt) || !after.Record.ExpiresAt.Equal(before.Record.ExpiresAt) {
		t.Fatalf("Complete again moved completion and expiry from %v, %v to %v, %v",
			before.Record.CompletedAt, before.Record.ExpiresAt, after.Record.CompletedAt, after.Record.ExpiresAt)
	}
	wantErr(t, "Complete with the same result and another token",
		s.Complete(ctx(t), k, stores.NewToken(), []byte("result"), longTTL), stores.ErrLeaseLost)

	empty := key(t, "empty")
	o := mustAcquire(t, s, empty, longLease)
	mustComplete(t, s, empty, o.Token, nil)
	mustComplete(t, s, empty, o.Token, []byte{})

	owners := RaceClaims(t, s, 16, 1)
	RaceCompletes(t, s, owners)
	RaceCompletes(t, s, owners)
}
