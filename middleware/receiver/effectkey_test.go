package receiver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

// keysOf runs Execute for scope and key and returns the effect keys fn saw
// for names, failing fn after reading them when fail is set.
func keysOf(t *testing.T, r *receiver.Receiver, scope, key string, fail bool, names ...string) []string {
	t.Helper()
	var keys []string
	_, err := r.Execute(t.Context(), scope, key, []byte("fp"), func(ctx context.Context) ([]byte, error) {
		for _, name := range names {
			k, ok := receiver.EffectKey(ctx, name)
			if !ok {
				t.Fatalf("no effect key in the run of %s/%s", scope, key)
			}
			keys = append(keys, k)
		}
		if fail {
			return nil, errors.New("failed after its effect")
		}
		return nil, nil
	})
	if (err != nil) != fail {
		t.Fatalf("Execute: %v", err)
	}
	return keys
}

// An effect key is the same for every run of one key in one scope — a
// retry after a failure, another receiver on the same store, a run without
// the store (fail-open) — and differs between scopes, keys and names.
func TestEffectKeyIsStablePerKeyScopeAndName(t *testing.T) {
	store := receivertest.NewMemory(t)
	r1, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	first := keysOf(t, r1, "charge", "payment-1", true, "", "refund")
	retried := keysOf(t, r2, "charge", "payment-1", false, "", "refund")
	if first[0] != retried[0] || first[1] != retried[1] {
		t.Fatalf("keys %q then %q: want the retry on another receiver to see the same", first, retried)
	}
	if first[0] == first[1] {
		t.Fatalf("two names got one key %q", first[0])
	}
	if len(first[0]) != 64 || strings.Contains(first[0], "payment-1") {
		t.Fatalf("key %q: want 64 hex characters that do not show the record key", first[0])
	}

	down := receivertest.NewFaultyStore(t)
	down.Fail("claim", stores.ErrUnavailable)
	open, err := receiver.New(receiver.Config{Store: down, OnStoreError: receiver.FailOpen})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, open, "charge", "payment-1", false, ""); got[0] != first[0] {
		t.Fatalf("fail-open run: key %q, want %q", got[0], first[0])
	}

	seen := map[string]string{first[0]: "charge/payment-1"}
	for _, other := range []struct{ scope, key string }{{"notify", "payment-1"}, {"charge", "payment-2"}, {"http", "payment-1"}} {
		k := keysOf(t, r1, other.scope, other.key, false, "")[0]
		if prev, dup := seen[k]; dup {
			t.Fatalf("%s/%s has the key of %s", other.scope, other.key, prev)
		}
		seen[k] = other.scope + "/" + other.key
	}
	if _, ok := receiver.EffectKey(t.Context(), ""); ok {
		t.Fatal("an effect key outside a run")
	}
}
