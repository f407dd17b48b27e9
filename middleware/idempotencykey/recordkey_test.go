package idempotencykey_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// The exported derivations name exactly the records the two faces keep, and
// a client's key never names another client's record.
func TestRecordKeysAddressTheReceiversRecords(t *testing.T) {
	t.Parallel()
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	r, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikey.NewKeys(map[string]string{"key-a": "client-a"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /things", idempotencykey.Middleware(r)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	req := httptest.NewRequest(http.MethodPost, "/things", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	req.Header.Set(idempotencykey.Header, `"abc"`)
	rec := httptest.NewRecorder()
	apikey.Authenticate(keys, nil)(mux).ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status = %d, want 201", rec.Code)
	}

	key, err := idempotencykey.Parse(`"abc"`)
	if err != nil || key != "abc" {
		t.Fatalf(`Parse("\"abc\"") = %q, %v; want abc`, key, err)
	}
	ctx := context.Background()
	own := receiver.RecordKey(idempotencykey.Scope, idempotencykey.RequestKey("client-a", "POST", "POST /things", key))
	if e, err := store.Lookup(ctx, own); err != nil || e.Status != stores.Completed {
		t.Fatalf("the client's record: %v, %v; want completed", e.Status, err)
	}
	other := receiver.RecordKey(idempotencykey.Scope, idempotencykey.RequestKey("client-b", "POST", "POST /things", key))
	if _, err := store.Lookup(ctx, other); !errors.Is(err, stores.ErrNotFound) {
		t.Fatalf("another client's key: %v, want %v", err, stores.ErrNotFound)
	}

	if _, err := r.Execute(ctx, "charge", "pay-1", nil, func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if e, err := store.Lookup(ctx, receiver.RecordKey("charge", "pay-1")); err != nil || e.Status != stores.Completed {
		t.Fatalf("the handler's record: %v, %v; want completed", e.Status, err)
	}
}

func TestParseIdempotencyKey(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"", `""`, "(a b)", "caf\u00e9", `"a";x=1`} {
		if k, err := idempotencykey.Parse(value); problem.KindOf(err) != problem.Invalid {
			t.Errorf("Parse(%q) = %q, %v; want a 400 problem", value, k, err)
		}
	}
	if k, err := idempotencykey.Parse("pay-1"); err != nil || k != "pay-1" {
		t.Errorf(`Parse("pay-1") = %q, %v`, k, err)
	}
}

func ExampleRequestKey() {
	fmt.Println(receiver.RecordKey(idempotencykey.Scope, idempotencykey.RequestKey("client-a", "POST", "POST /v1/charges", "k-1")))
	// Output:
	// http:"client-a" "POST" "POST /v1/charges" "k-1"
}

// ClientOf reads back the client of every record key the face makes, and
// of no other key.
func TestClientOf(t *testing.T) {
	t.Parallel()
	for _, client := range []string{"client-a", "", `a "quoted" client`, "\x00"} {
		k := receiver.RecordKey(idempotencykey.Scope, idempotencykey.RequestKey(client, http.MethodPost, "POST /things", `"k" "x"`))
		if got, ok := idempotencykey.ClientOf(k); !ok || got != client {
			t.Errorf("ClientOf(%q) = %q, %v; want %q", k, got, ok, client)
		}
	}
	for _, k := range []string{"charge:k", receiver.RecordKey("charge", `"client-a" "POST"`), "http:client-a", "http:"} {
		if got, ok := idempotencykey.ClientOf(k); ok {
			t.Errorf("ClientOf(%q) = %q, true; want false", k, got)
		}
	}
}
