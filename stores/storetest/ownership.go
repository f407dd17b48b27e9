package storetest

import (
	"testing"

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
