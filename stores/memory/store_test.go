package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// The tests below run in a synctest bubble: time is fake and advances only
// when every goroutine is blocked, so expiry and the janitor are tested
// without real sleeps, and the bubble fails if the janitor outlives Close.

const (
	lease = time.Minute
	ttl   = time.Hour
)

func newStore(t *testing.T, cfg memory.Config) *memory.Store {
	t.Helper()
	s := memory.New(cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func claim(t *testing.T, s *memory.Store, key string, want stores.Status) stores.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), key, []byte("fp"), lease)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	if c.Status != want {
		t.Fatalf("Claim(%q) = %v, want %v", key, c.Status, want)
	}
	return c
}

func complete(t *testing.T, s *memory.Store, key string, token stores.Token, result []byte) {
	t.Helper()
	if err := s.Complete(context.Background(), key, token, result, ttl); err != nil {
		t.Fatalf("Complete(%q): %v", key, err)
	}
}

// A full store refuses new keys rather than forget a completed record: a
// flood of new keys must never make an old one run again.
func TestFullNeverEvictsCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Config{MaxEntries: 3, JanitorInterval: 24 * time.Hour})
		for _, k := range []string{"a", "b"} {
			complete(t, s, k, claim(t, s, k, stores.Acquired).Token, []byte(k))
		}
		held := claim(t, s, "held", stores.Acquired)

		for i := range 1000 {
			_, err := s.Claim(context.Background(), fmt.Sprint("flood-", i), []byte("fp"), lease)
			if !errors.Is(err, stores.ErrFull) || errors.Is(err, stores.ErrUnavailable) {
				t.Fatalf("Claim on a full store: %v, want ErrFull and not ErrUnavailable", err)
			}
		}
		if n := s.Len(); n != 3 {
			t.Fatalf("Len = %d, want 3", n)
		}
		for _, k := range []string{"a", "b"} {
			if got := claim(t, s, k, stores.Completed).Record.Result; string(got) != k {
				t.Errorf("result of %q = %q after the flood", k, got)
			}
		}
		claim(t, s, "held", stores.InProgress) // a live lease is never evicted

		if err := s.Release(context.Background(), "held", held.Token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		claim(t, s, "new", stores.Acquired)

		time.Sleep(ttl) // every record has ended; no janitor has run

		claim(t, s, "after-a", stores.Acquired)
		claim(t, s, "after-b", stores.Acquired)
		claim(t, s, "a", stores.Acquired) // a's record ended, like any other
	})
}

func TestFullDropsEndedLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Config{MaxEntries: 2, JanitorInterval: 24 * time.Hour})
		ctx := context.Background()
		crashed := claim(t, s, "crashed", stores.Acquired)
		live := claim(t, s, "live", stores.Acquired)
		time.Sleep(lease / 2)
		if _, err := s.Extend(ctx, "live", live.Token, lease); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		time.Sleep(lease / 2) // crashed's lease has ended, live's has not; no janitor run yet

		claim(t, s, "new", stores.Acquired)
		claim(t, s, "live", stores.InProgress)
		if err := s.Complete(ctx, "crashed", crashed.Token, nil, ttl); !errors.Is(err, stores.ErrLeaseLost) {
			t.Fatalf("Complete by the dropped owner: %v, want ErrLeaseLost", err)
		}
	})
}

func TestJanitorDeletesExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Config{JanitorInterval: time.Second})
		complete(t, s, "done", claim(t, s, "done", stores.Acquired).Token, []byte("r"))
		claim(t, s, "abandoned", stores.Acquired)
		if _, err := s.Claim(context.Background(), "long", nil, 3*lease); err != nil {
			t.Fatal(err)
		}

		time.Sleep(lease + time.Second) // the abandoned lease has ended
		synctest.Wait()                 // and the janitor has swept
		if n := s.Len(); n != 2 {
			t.Fatalf("Len after the lease ended = %d, want 2", n)
		}
		time.Sleep(ttl)
		synctest.Wait()
		if n := s.Len(); n != 0 {
			t.Fatalf("Len after every record expired = %d, want 0", n)
		}
	})
}

func TestCloseStopsJanitorAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New(memory.Config{JanitorInterval: time.Millisecond})
		c := claim(t, s, "k", stores.Acquired)
		time.Sleep(10 * time.Millisecond) // let the janitor tick

		for range 2 {
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		// The bubble panics if the janitor goroutine is still running when
		// this function returns.

		ctx := context.Background()
		_, claimErr := s.Claim(ctx, "k", nil, lease)
		_, extendErr := s.Extend(ctx, "k", c.Token, lease)
		for op, err := range map[string]error{
			"Claim":    claimErr,
			"Complete": s.Complete(ctx, "k", c.Token, nil, ttl),
			"Release":  s.Release(ctx, "k", c.Token),
			"Extend":   extendErr,
		} {
			if !errors.Is(err, stores.ErrUnavailable) || !errors.Is(err, stores.ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrUnavailable and ErrClosed", op, err)
			}
		}
		if n := s.Len(); n != 0 {
			t.Errorf("Len after Close = %d, want 0", n)
		}
	})
}

func TestSlicesAreCopied(t *testing.T) {
	s := newStore(t, memory.Config{})
	ctx := context.Background()
	fp, result := []byte("fingerprint"), []byte("result")

	owner, err := s.Claim(ctx, "k", fp, lease)
	if err != nil {
		t.Fatal(err)
	}
	fp[0] = 'X'
	claim(t, s, "k", stores.InProgress).Record.Fingerprint[1] = 'X'

	if err := s.Complete(ctx, "k", owner.Token, result, ttl); err != nil {
		t.Fatal(err)
	}
	result[0] = 'X'
	done := claim(t, s, "k", stores.Completed)
	done.Record.Fingerprint[2], done.Record.Result[1] = 'X', 'X'

	again := claim(t, s, "k", stores.Completed)
	if got := string(again.Record.Fingerprint); got != "fingerprint" {
		t.Errorf("stored fingerprint = %q, want %q", got, "fingerprint")
	}
	if got := string(again.Record.Result); got != "result" {
		t.Errorf("stored result = %q, want %q", got, "result")
	}
}

func ExampleNew() {
	s := memory.New(memory.Config{MaxEntries: 10_000})
	defer s.Close()

	ctx := context.Background()
	c, _ := s.Claim(ctx, "charge:p-1", []byte("payload-sha256"), 30*time.Second)
	_ = s.Complete(ctx, "charge:p-1", c.Token, []byte("charged"), 24*time.Hour)

	dup, _ := s.Claim(ctx, "charge:p-1", []byte("payload-sha256"), 30*time.Second)
	fmt.Println(c.Status, dup.Status, string(dup.Record.Result))
	// Output: acquired completed charged
}
