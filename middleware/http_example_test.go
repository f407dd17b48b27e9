package middleware_test

import (
	"net/http"

	"github.com/onceflow/onceflow/middleware"
	"github.com/onceflow/onceflow/stores/memory"
)

// The HTTP face wraps the unsafe routes, inside authentication, which
// names the client that scopes each Idempotency-Key.
func ExampleReceiver_HTTP() {
	store := memory.New(memory.Config{})
	defer func() { _ = store.Close() }()
	receiver, err := middleware.NewReceiver(middleware.Config{Store: store})
	if err != nil {
		panic(err)
	}
	keys, err := middleware.NewAPIKeys(map[string]string{"k3y-1": "client-a"})
	if err != nil {
		panic(err)
	}
	idempotent := receiver.HTTP(middleware.WithMaxRequestBody(64 << 10))
	createPayment := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted) // accept the payment once
	})
	mux := http.NewServeMux()
	mux.Handle("POST /v1/payments", idempotent(createPayment))
	// Outermost first: authentication -> routing -> Idempotency-Key -> handler.
	_ = http.Server{Handler: middleware.Authenticate(keys, nil)(mux)}
}
