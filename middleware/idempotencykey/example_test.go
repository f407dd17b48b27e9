package idempotencykey_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// The HTTP face wraps the unsafe routes, inside authentication, which
// names the client that scopes each Idempotency-Key.
func ExampleMiddleware() {
	store := memory.New(memory.Config{})
	defer func() { _ = store.Close() }()
	r, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		panic(err)
	}
	keys, err := apikey.NewKeys(map[string]string{"k3y-1": "client-a"})
	if err != nil {
		panic(err)
	}
	idempotent := idempotencykey.Middleware(r, idempotencykey.WithMaxRequestBody(64<<10))
	createPayment := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted) // accept the payment once
	})
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", idempotent(createPayment))
	// Outermost first: authentication -> routing -> Idempotency-Key -> handler.
	handler := apikey.Authenticate(keys, nil)(mux)

	for range 2 { // the client sends the same request twice
		req := httptest.NewRequest("POST", "/v1/charges", strings.NewReader(`{"payment_id":"pay-1"}`))
		req.Header.Set("Authorization", "Bearer k3y-1")
		req.Header.Set("Idempotency-Key", "order-42")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Code, "replayed:", rec.Header().Get("Idempotent-Replayed") == "true")
	}
	// Output:
	// 202 replayed: false
	// 202 replayed: true
}
