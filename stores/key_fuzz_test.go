package stores_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// FuzzStorageKey checks the key every store writes under: for any key it is
// deterministic, at most stores.MaxKeyBytes of valid UTF-8 without NUL
// (what a PostgreSQL text primary key accepts), and distinct keys never
// share one, however long: two keys that differ only in their last byte
// past the limit stay apart. A memory store, keyed the same way, must see
// them as two records.
//
//	go test -run '^$' -fuzz '^FuzzStorageKey$' ./stores/
func FuzzStorageKey(f *testing.F) {
	f.Add("payment-1", "payment-2")
	f.Add("", "k")
	f.Add("sha256:abc", "abc")
	f.Add("a\x00b", "a\x00c")
	f.Add("\xff", "\xfe")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := checkStorageKey(t, a), checkStorageKey(t, b)
		if a != b && ka != "" && ka == kb {
			t.Fatalf("keys %q and %q share the storage key %q", a, b, ka)
		}
		// Past the limit, only the last byte differs.
		long := strings.Repeat("k", stores.MaxKeyBytes) + a
		la, lb := checkStorageKey(t, long+"0"), checkStorageKey(t, long+"1")
		if la == lb {
			t.Fatalf("two %d-byte keys differing in their last byte share the storage key %q", len(long)+1, la)
		}
		if a == "" || b == "" {
			return
		}
		s := memory.New(memory.Config{})
		defer s.Close()
		ctx := context.Background()
		if c, err := s.Claim(ctx, a, nil, time.Minute); err != nil || c.Status != stores.Acquired {
			t.Fatalf("claiming %q: %v, %v", a, c.Status, err)
		}
		want := stores.Acquired
		if a == b {
			want = stores.InProgress
		}
		if c, err := s.Claim(ctx, b, nil, time.Minute); err != nil || c.Status != want {
			t.Fatalf("claiming %q after %q: %v, %v; want %v", b, a, c.Status, err, want)
		}
	})
}

// checkStorageKey returns the storage key of key after checking its
// properties; "" for the empty key, which must be refused.
func checkStorageKey(t *testing.T, key string) string {
	t.Helper()
	k, err := stores.StorageKey(key)
	if key == "" {
		if !errors.Is(err, stores.ErrInvalidKey) {
			t.Fatalf("empty key: %q, %v; want ErrInvalidKey", k, err)
		}
		return ""
	}
	if err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
	if again, _ := stores.StorageKey(key); again != k {
		t.Fatalf("key %q: storage key %q, then %q", key, k, again)
	}
	if len(k) == 0 || len(k) > stores.MaxKeyBytes || !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
		t.Fatalf("key %q: storage key %q is not 1 to %d bytes of UTF-8 without NUL", key, k, stores.MaxKeyBytes)
	}
	if k != key && (!strings.HasPrefix(k, "sha256:") || len(k) != len("sha256:")+64) {
		t.Fatalf("key %q: changed to %q, which is not its hash", key, k)
	}
	return k
}
