package idempotencykey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

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
		got[id] = append(got[id], req.Header.Get(Header))
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
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	for attempt := range 2 {
		_, _ = r.Execute(t.Context(), "charge", "payment-1", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			send(ctx, http.MethodPost, "plain")
			send(WithEffectName(ctx, "first"), http.MethodPost, "first")
			send(WithEffectName(ctx, "second"), http.MethodPost, "second")
			send(ctx, http.MethodGet, "read")
			send(ctx, http.MethodPost, "own", Header, "mine")
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
	if want := receivertest.EffectKey(t, "charge", "payment-1", "POST "+strings.TrimPrefix(srv.URL, "http://")+"/charges"); plain[0] != want {
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
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sent = append(sent, req.Header.Get(Header))
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
		without := receiver.WithoutEffectKeys(ctx)
		if k, ok := receiver.EffectKey(without, ""); ok {
			t.Errorf("EffectKey without keys = %q, want none", k)
		}
		if _, ok := receiver.EffectKey(ctx, ""); !ok {
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
