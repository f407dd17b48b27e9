package storetest

import (
	"sync"
	"testing"

	"github.com/onceflow/onceflow/stores"
)

// claimers is how many goroutines race for one key.
const claimers = 100

func testConcurrentClaimsOneWinner(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")

	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results = make([]stores.Claim, claimers)
		errs    = make([]error, claimers)
	)
	for i := range claimers {
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Claim(ctx(t), k, fingerprint, longLease)
		})
	}
	close(start)
	wg.Wait()

	var acquired, inProgress int
	for i, c := range results {
		if errs[i] != nil {
			t.Fatalf("claimer %d: %v", i, errs[i])
		}
		switch c.Status {
		case stores.Acquired:
			acquired++
		case stores.InProgress:
			inProgress++
		default:
			t.Fatalf("claimer %d got %v", i, c.Status)
		}
	}
	if acquired != 1 || inProgress != claimers-1 {
		t.Fatalf("%d claimers: acquired=%d in_progress=%d, want 1 and %d", claimers, acquired, inProgress, claimers-1)
	}
}
