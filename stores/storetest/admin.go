package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// testAdmin runs the cases of [stores.Admin] one after the other on one
// store, each on keys of its own: a store per case would cost a schema
// each on PostgreSQL for no more coverage.
func testAdmin(t *testing.T, h Harness) {
	s := h.New(t)
	a := adminOf(t, s)
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s stores.Store, a stores.Admin, h Harness)
	}{
		{"LookupReadsEachState", testLookupReadsEachState},
		{"RemoveFreesHeldKey", testRemoveFreesHeldKey},
		{"RemoveCompletedRunsAgain", testRemoveCompletedRunsAgain},
		{"RemoveSparesRecordCompletedMeanwhile", testRemoveSparesRecordCompletedMeanwhile},
		{"EndedRecordIsNotFound", testEndedRecordIsNotFound},
		{"BadInput", testAdminBadInput},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, a, h) })
	}
}

// adminOf returns s as a [stores.Admin]: every store implements it.
func adminOf(t *testing.T, s stores.Store) stores.Admin {
	t.Helper()
	a, ok := s.(stores.Admin)
	if !ok {
		t.Fatalf("%T does not implement stores.Admin", s)
	}
	return a
}

// held is how Lookup reads a record in progress under token.
func held(token stores.Token) stores.Entry {
	return stores.Entry{Status: stores.InProgress, Token: token}
}

func mustLookup(t *testing.T, a stores.Admin, key string, want stores.Status) stores.Entry {
	t.Helper()
	e, err := a.Lookup(ctx(t), key)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", short(key), err)
	}
	if e.Status != want {
		t.Fatalf("Lookup(%q) status = %v, want %v", short(key), e.Status, want)
	}
	return e
}

func testLookupReadsEachState(t *testing.T, s stores.Store, a stores.Admin, _ Harness) {
	k := key(t, "k")
	_, err := a.Lookup(ctx(t), k)
	wantErr(t, "Lookup of an absent key", err, stores.ErrNotFound)

	owner := mustAcquire(t, s, k, longLease)
	e := mustLookup(t, a, k, stores.InProgress)
	if e.Token != owner.Token {
		t.Fatalf("Lookup token = %q, want the owner's %q", e.Token, owner.Token)
	}
	wantBytes(t, "fingerprint", e.Record.Fingerprint, fingerprint)
	wantNear(t, "lease end", e.LeaseUntil, owner.LeaseUntil)
	wantNear(t, "created at", e.Record.CreatedAt, time.Now())

	mustComplete(t, s, k, owner.Token, []byte("result"))
	e = mustLookup(t, a, k, stores.Completed)
	if e.Token != owner.Token || !e.LeaseUntil.IsZero() {
		t.Fatalf("completed Lookup token %q lease %v, want %q and none", e.Token, e.LeaseUntil, owner.Token)
	}
	wantBytes(t, "result", e.Record.Result, []byte("result"))
	wantNear(t, "completed at", e.Record.CompletedAt, time.Now())
	wantNear(t, "expires at", e.Record.ExpiresAt, time.Now().Add(longTTL))

	// Reading changed nothing.
	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.Completed)
}

func testRemoveFreesHeldKey(t *testing.T, s stores.Store, a stores.Admin, _ Harness) {
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)

	wantErr(t, "Remove with another token", a.Remove(ctx(t), k, held(stores.NewToken())), stores.ErrNotFound)
	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.InProgress)

	if err := a.Remove(ctx(t), k, mustLookup(t, a, k, stores.InProgress)); err != nil {
		t.Fatalf("Remove of a held key: %v", err)
	}
	next := mustAcquire(t, s, k, longLease) // at once, lease or no lease
	wantErr(t, "Complete by the removed owner", s.Complete(ctx(t), k, owner.Token, []byte("late"), longTTL), stores.ErrLeaseLost)
	// The removed owner's token no longer names a record either.
	wantErr(t, "Remove with the removed owner's token", a.Remove(ctx(t), k, held(owner.Token)), stores.ErrNotFound)
	mustComplete(t, s, k, next.Token, []byte("next"))
}

func testRemoveCompletedRunsAgain(t *testing.T, s stores.Store, a stores.Admin, _ Harness) {
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)
	mustComplete(t, s, k, owner.Token, []byte("first"))

	read := mustLookup(t, a, k, stores.Completed)
	wantErr(t, "Remove of a completed key read as in progress", a.Remove(ctx(t), k, held(owner.Token)), stores.ErrNotFound)
	if err := a.Remove(ctx(t), k, read); err != nil {
		t.Fatalf("Remove of a completed key: %v", err)
	}
	_, err := a.Lookup(ctx(t), k)
	wantErr(t, "Lookup after Remove", err, stores.ErrNotFound)
	again := mustAcquire(t, s, k, longLease)
	wantErr(t, "second Remove", a.Remove(ctx(t), k, read), stores.ErrNotFound)
	mustLookup(t, a, k, stores.InProgress) // the second Remove spared the new claim
	mustComplete(t, s, k, again.Token, []byte("second"))
}

// An in-progress record that its owner completed after it was read keeps
// its token, yet is not the record read: Remove leaves it.
func testRemoveSparesRecordCompletedMeanwhile(t *testing.T, s stores.Store, a stores.Admin, _ Harness) {
	k := key(t, "k")
	owner := mustAcquire(t, s, k, longLease)
	read := mustLookup(t, a, k, stores.InProgress)
	mustComplete(t, s, k, owner.Token, []byte("done"))
	wantErr(t, "Remove of a record completed since it was read", a.Remove(ctx(t), k, read), stores.ErrNotFound)
	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.Completed)
}

func testEndedRecordIsNotFound(t *testing.T, s stores.Store, a stores.Admin, _ Harness) {
	k := key(t, "k")
	crashed := mustAcquire(t, s, k, shortLease)
	deadline := time.Now().Add(eventually)
	for {
		_, err := a.Lookup(ctx(t), k)
		if err != nil {
			wantErr(t, "Lookup after the lease ended", err, stores.ErrNotFound)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Lookup still finds the record %v after its lease", eventually)
		}
		time.Sleep(25 * time.Millisecond)
	}
	wantErr(t, "Remove of an ended record", a.Remove(ctx(t), k, held(crashed.Token)), stores.ErrNotFound)
	mustAcquire(t, s, k, longLease)
}

func testAdminBadInput(t *testing.T, s stores.Store, a stores.Admin, h Harness) {
	_, err := a.Lookup(ctx(t), "")
	wantErr(t, "Lookup(\"\")", err, stores.ErrInvalidKey)
	wantErr(t, "Remove(\"\")", a.Remove(ctx(t), "", held(stores.NewToken())), stores.ErrInvalidKey)

	k := key(t, "k")
	mustAcquire(t, s, k, longLease)
	wantErr(t, "Remove with an empty token", a.Remove(ctx(t), k, held("")), stores.ErrInvalidArgument)
	wantErr(t, "Remove without a status", a.Remove(ctx(t), k, stores.Entry{Token: stores.NewToken()}), stores.ErrInvalidArgument)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.Lookup(cancelled, k)
	wantErr(t, "Lookup with a cancelled context", err, context.Canceled)
	read := mustLookup(t, a, k, stores.InProgress)
	wantErr(t, "Remove with a cancelled context", a.Remove(cancelled, k, read), context.Canceled)
	mustLookup(t, a, k, stores.InProgress) // none of it removed the record

	down := adminOf(t, h.Unavailable(t))
	_, err = down.Lookup(ctx(t), k)
	wantUnavailable(t, "Lookup", err)
	wantUnavailable(t, "Remove", down.Remove(ctx(t), k, read))
}
