package storetest

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// A store with a capacity refuses what does not fit and forgets nothing to
// make room: a completed record dropped for a new one would let its
// duplicate run again. These cases run when the harness sets Bounded.

func testFullRefusesClaim(t *testing.T, h Harness) {
	s := bounded(t, h, 3)
	a, b, held := key(t, "a"), key(t, "b"), key(t, "held")
	mustComplete(t, s, a, mustAcquire(t, s, a, longLease).Token, []byte("result a"))
	mustComplete(t, s, b, mustAcquire(t, s, b, longLease).Token, []byte("result b"))
	owner := mustAcquire(t, s, held, longLease)

	for i := range 10 {
		wantFull(t, s, key(t, "new-"+strconv.Itoa(i)))
	}
	for k, result := range map[string]string{a: "result a", b: "result b"} {
		c := mustClaim(t, s, k, fingerprint, longLease)
		wantStatus(t, c, stores.Completed)
		wantBytes(t, "result", c.Record.Result, []byte(result))
	}
	wantStatus(t, mustClaim(t, s, held, fingerprint, longLease), stores.InProgress)

	// A released record makes room.
	if err := s.Release(ctx(t), held, owner.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustAcquire(t, s, key(t, "new-0"), longLease)
	wantFull(t, s, key(t, "new-1"))
}

func testFullMakesRoomOnlyFromExpired(t *testing.T, h Harness) {
	s := bounded(t, h, 2)
	done, crashed := key(t, "done"), key(t, "crashed")
	owner := mustAcquire(t, s, done, longLease)
	if err := s.Complete(ctx(t), done, owner.Token, []byte("r"), shortLease); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	lost := mustAcquire(t, s, crashed, shortLease)
	time.Sleep(shortLease + 200*time.Millisecond)

	// Both records have ended and read as absent: the crashed owner's key
	// is taken over in its own place, and the expired completed record
	// makes room for a new key.
	successor := mustAcquire(t, s, crashed, longLease)
	if successor.Token == lost.Token {
		t.Fatal("takeover in a full store reused the crashed owner's token")
	}
	mustAcquire(t, s, key(t, "new"), longLease)
	wantFull(t, s, done) // its record is gone, not revived
	wantErr(t, "Complete by the crashed owner", s.Complete(ctx(t), crashed, lost.Token, nil, longTTL), stores.ErrLeaseLost)
}

// bounded returns a store that holds at most capacity records, or skips.
func bounded(t *testing.T, h Harness, capacity int) stores.Store {
	t.Helper()
	if h.Bounded == nil {
		t.Skip("the store has no capacity")
	}
	return h.Bounded(t, capacity)
}

// wantFull checks that claiming key is refused as ErrFull, and as nothing
// else: not an outage, not an acquisition.
func wantFull(t *testing.T, s stores.Store, key string) {
	t.Helper()
	c, err := s.Claim(ctx(t), key, fingerprint, longLease)
	if !errors.Is(err, stores.ErrFull) {
		t.Fatalf("Claim(%q) in a full store = %v, %v; want ErrFull", short(key), c.Status, err)
	}
	if errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Claim(%q) in a full store: %v also matches ErrUnavailable", short(key), err)
	}
	if c.Status != 0 || c.Token != "" {
		t.Fatalf("Claim(%q) in a full store reported %v with token %q", short(key), c.Status, c.Token)
	}
}
