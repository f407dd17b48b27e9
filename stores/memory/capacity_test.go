package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// refused claims key and returns the FullError that refuses it.
func refused(t *testing.T, s *memory.Store, key string) *stores.FullError {
	t.Helper()
	_, err := s.Claim(context.Background(), key, []byte("fp"), lease)
	full, ok := errors.AsType[*stores.FullError](err)
	if !ok || !errors.Is(err, stores.ErrFull) {
		t.Fatalf("Claim(%q) = %v, want a *stores.FullError", key, err)
	}
	return full
}

// Results count against MaxBytes: a store of few records but large
// results refuses new keys once they fill it, however few the records.
func TestMaxBytesBoundsResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Config{MaxEntries: 1000, MaxBytes: 100 << 10, JanitorInterval: 24 * time.Hour})
		big := make([]byte, 30<<10)
		stored := 0
		for i := range 10 {
			k := fmt.Sprint("big-", i)
			c, err := s.Claim(context.Background(), k, []byte("fp"), lease)
			if errors.Is(err, stores.ErrFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			complete(t, s, k, c.Token, big)
			stored++
		}
		if stored != 4 { // 3 results of 30 KiB leave room; the fourth fills 100 KiB
			t.Fatalf("stored %d results of 30 KiB in 100 KiB, want 4", stored)
		}
		full := refused(t, s, "one-more")
		if full.Owner || !strings.Contains(full.Limit, "bytes") || full.RoomIn != ttl {
			t.Errorf("FullError = %+v, want the store's bytes, room in %v", full, ttl)
		}
	})
}

// With owners, one owner holds at most its share: another still creates
// records, and the refused owner is told when its own soonest record
// expires.
func TestOwnerShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owner := func(key string) string { o, _, _ := strings.Cut(key, "/"); return o }
		s := newStore(t, memory.Config{MaxEntries: 100, Owner: owner, OwnerShare: 0.25, JanitorInterval: 24 * time.Hour})
		first := claim(t, s, "greedy/0", stores.Acquired)
		complete(t, s, "greedy/0", first.Token, nil)
		time.Sleep(time.Minute)
		for i := 1; i < 25; i++ {
			k := fmt.Sprint("greedy/", i)
			complete(t, s, k, claim(t, s, k, stores.Acquired).Token, nil)
		}
		full := refused(t, s, "greedy/25")
		if !full.Owner || full.Limit != "25 records" || full.RoomIn != ttl-time.Minute {
			t.Errorf("FullError = %+v, want the owner's 25 records, room in %v", full, ttl-time.Minute)
		}
		for i := range 75 { // the others fill the rest
			claim(t, s, fmt.Sprint("other-", i%3, "/", i), stores.Acquired)
		}
		if full := refused(t, s, "late/0"); full.Owner {
			t.Errorf("a full store answered %+v, want the store's limit", full)
		}

		time.Sleep(ttl - time.Minute) // greedy/0 has expired; others' leases too
		claim(t, s, "greedy/25", stores.Acquired)
		refused(t, s, "greedy/26") // one expired record, one new one
	})
}
