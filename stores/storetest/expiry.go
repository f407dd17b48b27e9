package storetest

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

func testTakeoverAfterLeaseEnds(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	crashed := mustAcquire(t, s, k, shortLease)

	// The crashed owner never completes; once its lease ends another worker
	// takes the key over with a new token.
	successor := waitForAcquire(t, s, k, longLease)
	if successor.Token == crashed.Token {
		t.Fatal("takeover reused the crashed owner's token")
	}
	wantErr(t, "Complete by the crashed owner", s.Complete(ctx(t), k, crashed.Token, []byte("late"), longTTL), stores.ErrLeaseLost)
	wantErr(t, "Release by the crashed owner", s.Release(ctx(t), k, crashed.Token), stores.ErrLeaseLost)
	_, err := s.Extend(ctx(t), k, crashed.Token, longLease)
	wantErr(t, "Extend by the crashed owner", err, stores.ErrLeaseLost)

	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.InProgress)
	mustComplete(t, s, k, successor.Token, []byte("successor"))
	c := mustClaim(t, s, k, fingerprint, longLease)
	wantBytes(t, "result", c.Record.Result, []byte("successor"))
}

func testExtendKeepsLease(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	owner := mustAcquire(t, s, k, shortLease)

	before := time.Now()
	until, err := s.Extend(ctx(t), k, owner.Token, longLease)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	wantNear(t, "extended lease end", until, before.Add(longLease))

	// Well past the original lease the key is still held by its owner.
	time.Sleep(2 * shortLease)
	c := mustClaim(t, s, k, fingerprint, longLease)
	wantStatus(t, c, stores.InProgress)
	wantNear(t, "LeaseUntil seen by others", c.LeaseUntil, until)
	mustComplete(t, s, k, owner.Token, []byte("done"))

	// Extend can also shorten the lease; the store's clock then ends it.
	k2 := key(t, "shortened")
	o2 := mustAcquire(t, s, k2, longLease)
	if _, err := s.Extend(ctx(t), k2, o2.Token, shortLease); err != nil {
		t.Fatalf("Extend(shorter): %v", err)
	}
	waitForAcquire(t, s, k2, longLease)
}

func testCompleteAfterLeaseEndsIsLeaseLost(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	owner := mustAcquire(t, s, k, shortLease)
	time.Sleep(shortLease + 200*time.Millisecond)

	// Nobody took the key over, but the lease has ended: the owner must not
	// complete, because a successor may already be running the effect.
	wantErr(t, "Complete after lease end", s.Complete(ctx(t), k, owner.Token, []byte("late"), longTTL), stores.ErrLeaseLost)
	_, err := s.Extend(ctx(t), k, owner.Token, longLease)
	wantErr(t, "Extend after lease end", err, stores.ErrLeaseLost)
	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.Acquired)
}

func testCompletedRecordExpires(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)
	if err := s.Complete(ctx(t), k, owner.Token, []byte("r"), shortLease); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.Completed)

	// After its TTL the record is forgotten: the key can be processed anew.
	next := waitForAcquire(t, s, k, longLease)
	if next.Token == owner.Token {
		t.Fatal("re-acquisition after expiry reused the old token")
	}
}
