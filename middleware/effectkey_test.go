package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/stores"
)

// keysOf runs Execute for scope and key and returns the effect keys fn saw
// for names, failing fn after reading them when fail is set.
func keysOf(t *testing.T, r *Receiver, scope, key string, fail bool, names ...string) []string {
	t.Helper()
	var keys []string
	_, err := r.Execute(t.Context(), scope, key, []byte("fp"), func(ctx context.Context) ([]byte, error) {
		for _, name := range names {
			k, ok := EffectKey(ctx, name)
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
	store := newMemory(t)
	r1, err := NewReceiver(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := NewReceiver(Config{Store: store})
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

	down := newFaultyStore(t)
	down.fail("claim", stores.ErrUnavailable)
	open, err := NewReceiver(Config{Store: down, OnStoreError: FailOpen})
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
	if _, ok := EffectKey(t.Context(), ""); ok {
		t.Fatal("an effect key outside a run")
	}
}

// The handler of a message finds its effect key in the message's context:
// the same on the retry after it failed, and for a copy of the message.
func TestEffectKeyInTheMessageContext(t *testing.T) {
	r, _ := newReceiver(t, Config{})
	ps := newPubSub(t, true)
	router := newRouter(t)
	keys := make(chan string, 3)
	var runs atomic.Int32
	router.AddConsumerHandler("charge", "payments", ps, func(msg *message.Message) error {
		k, _ := EffectKey(msg.Context(), "")
		keys <- k
		if runs.Add(1) == 1 {
			return errors.New("fails once its effect is done")
		}
		return nil
	})
	if err := Install(router, RouterConfig{Receiver: r, PoisonPublisher: ps, RetryInterval: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	run(t, router)
	publish(t, ps, "payments", keyed("copy-1", "payment-1", "p"))
	first, retried := <-keys, <-keys
	if first == "" || first != retried {
		t.Fatalf("keys %q then %q: want one effect key for the run and its retry", first, retried)
	}
	want, _ := EffectKey(withEffectScope(t.Context(), RecordKey("charge", "payment-1")), "")
	if first != want {
		t.Fatalf("key %q, want that of handler charge and key payment-1, %q", first, want)
	}
}

// EffectKeys adds the run's effect key to unsafe requests: the same on a
// retry, distinct per named effect, none on a GET or outside a run, and a
// request's own key is kept.
func TestEffectKeysRoundTripper(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]string{} // "METHOD /path name" -> keys sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := req.Method + " " + req.URL.Path + " " + req.URL.Query().Get("n")
		got[id] = append(got[id], req.Header.Get(IdempotencyKeyHeader))
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: EffectKeys(nil)}
	send := func(ctx context.Context, method, query string, header ...string) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+"/charges?n="+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	r, _ := newReceiver(t, Config{})
	for attempt := range 2 {
		_, _ = r.Execute(t.Context(), "charge", "payment-1", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			send(ctx, http.MethodPost, "plain")
			send(WithEffectName(ctx, "first"), http.MethodPost, "first")
			send(WithEffectName(ctx, "second"), http.MethodPost, "second")
			send(ctx, http.MethodGet, "read")
			send(ctx, http.MethodPost, "own", IdempotencyKeyHeader, "mine")
			if attempt == 0 {
				return nil, errors.New("failed after its effects")
			}
			return nil, nil
		})
	}
	send(t.Context(), http.MethodPost, "outside")

	mu.Lock()
	defer mu.Unlock()
	plain, first, second := got["POST /charges plain"], got["POST /charges first"], got["POST /charges second"]
	for name, keys := range map[string][]string{"plain": plain, "first": first, "second": second} {
		if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
			t.Errorf("%s: keys %q, want one key sent on both attempts", name, keys)
		}
	}
	if plain[0] == first[0] || first[0] == second[0] || plain[0] == second[0] {
		t.Errorf("keys %q %q %q: want one per effect", plain[0], first[0], second[0])
	}
	if want, _ := EffectKey(withEffectScope(t.Context(), RecordKey("charge", "payment-1")), "POST "+strings.TrimPrefix(srv.URL, "http://")+"/charges"); plain[0] != want {
		t.Errorf("unnamed request's key %q, want the effect named by method, host and path %q", plain[0], want)
	}
	for id, want := range map[string][]string{"GET /charges read": {"", ""}, "POST /charges own": {"mine", "mine"}, "POST /charges outside": {""}} {
		if fmt.Sprint(got[id]) != fmt.Sprint(want) {
			t.Errorf("%s: keys %q, want %q", id, got[id], want)
		}
	}
}

// WithoutEffectKeys takes a run's keys away: EffectKey reports none and
// EffectKeys sends the request as it is, while the run's own context
// keeps them.
func TestWithoutEffectKeys(t *testing.T) {
	r, _ := newReceiver(t, Config{})
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sent = append(sent, req.Header.Get(IdempotencyKeyHeader))
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: EffectKeys(nil)}
	post := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	_, err := r.Execute(t.Context(), "charge", "payment-1", []byte("fp"), func(ctx context.Context) ([]byte, error) {
		without := WithoutEffectKeys(ctx)
		if k, ok := EffectKey(without, ""); ok {
			t.Errorf("EffectKey without keys = %q, want none", k)
		}
		if _, ok := EffectKey(ctx, ""); !ok {
			t.Error("the run's own context lost its effect key")
		}
		post(without)
		post(ctx)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 || sent[0] != "" || sent[1] == "" {
		t.Fatalf("Idempotency-Key sent without keys, then with: %q; want none, then the run's", sent)
	}
}
