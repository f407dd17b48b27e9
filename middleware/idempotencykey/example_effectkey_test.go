package idempotencykey_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// A handler that charges a provider and then fails is retried: in lease
// mode it charges again, and the provider, given the effect key, answers
// the second charge with the first.
func ExampleEffectKeys() {
	var mu sync.Mutex
	charges := map[string]int{} // the provider's: charge number by Idempotency-Key
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		key := req.Header.Get("Idempotency-Key")
		if _, done := charges[key]; !done || key == "" {
			charges[key] = len(charges) + 1
		}
		fmt.Fprintf(w, "ch_%d", charges[key])
	}))
	defer provider.Close()
	client := &http.Client{Transport: idempotencykey.EffectKeys(nil)}

	r, err := receiver.New(receiver.Config{Store: memory.New(memory.Config{}), Lease: time.Minute})
	if err != nil {
		panic(err)
	}
	for attempt := range 2 {
		_, err := r.Execute(context.Background(), "charge", "payment-1", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, provider.URL+"/charges", nil)
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			id, _ := io.ReadAll(resp.Body)
			fmt.Printf("attempt %d: charge %s\n", attempt+1, id)
			if attempt == 0 {
				return nil, errors.New("the ledger write failed after the charge")
			}
			return id, nil
		})
		if err != nil {
			fmt.Println("attempt", attempt+1, "failed:", err)
		}
	}
	fmt.Println("charges at the provider:", len(charges))
	// Output:
	// attempt 1: charge ch_1
	// attempt 1 failed: the ledger write failed after the charge
	// attempt 2: charge ch_1
	// charges at the provider: 1
}
