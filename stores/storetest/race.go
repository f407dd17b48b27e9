package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// RaceClaims releases claimers goroutines per key on keys keys ("key-0",
// "key-1", ...) at once, each claiming its key with fingerprint "fp", and
// fails t unless every key was acquired by exactly one of them and seen in
// progress, with that fingerprint, by the others. It returns each key's
// owner token. Tests of batching race claims this way to see many calls
// coalesce without weakening the one-winner guarantee.
func RaceClaims(t *testing.T, s stores.Store, keys, claimers int) map[string]stores.Token {
	t.Helper()
	var (
		mu    sync.Mutex
		got   = map[string][]stores.Claim{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range keys * claimers {
		k := fmt.Sprintf("key-%d", i%keys)
		wg.Go(func() {
			<-start
			c, err := s.Claim(ctx(t), k, []byte("fp"), time.Minute)
			if err != nil {
				t.Errorf("Claim(%s): %v", k, err)
				return
			}
			mu.Lock()
			got[k] = append(got[k], c)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()

	if len(got) != keys {
		t.Fatalf("claims for %d keys, want %d", len(got), keys)
	}
	owners := map[string]stores.Token{}
	for k, cs := range got {
		for _, c := range cs {
			switch c.Status {
			case stores.Acquired:
				if _, dup := owners[k]; dup {
					t.Fatalf("key %s acquired twice", k)
				}
				owners[k] = c.Token
			case stores.InProgress:
				if string(c.Record.Fingerprint) != "fp" {
					t.Fatalf("key %s in progress with fingerprint %q", k, c.Record.Fingerprint)
				}
			default:
				t.Fatalf("key %s: claim %v", k, c.Status)
			}
		}
		if _, ok := owners[k]; !ok || len(cs) != claimers {
			t.Fatalf("key %s: %d claims, acquired %v", k, len(cs), ok)
		}
	}
	return owners
}

// RaceCompletes releases one goroutine per key of owners at once, each
// completing its key with its owner's token and the key as the result, and
// fails t if any Complete fails. Released together, the calls queue behind
// one another as a busy service's do, so a batching store coalesces them
// however slowly the machine starts goroutines.
func RaceCompletes(t *testing.T, s stores.Store, owners map[string]stores.Token) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for k, token := range owners {
		wg.Go(func() {
			<-start
			if err := s.Complete(ctx(t), k, token, []byte(k), time.Minute); err != nil {
				t.Errorf("Complete(%s): %v", k, err)
			}
		})
	}
	close(start)
	wg.Wait()
}
