//go:build !race

package idempotencykey

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// httpAllocBudget is the most allocations the HTTP face may add to a
// request with a fresh key on the memory store: the held response and its
// frozen header, the body read once and handed on, the request's key and
// fingerprint, the context that carries the effect key, the request copy
// that carries the fencing token, the stored envelope, the store's record,
// and the response copied out to the client.
const httpAllocBudget = 23

func TestHTTPAllocationBudget(t *testing.T) {
	r, _ := receivertest.NewBenchReceiver(t, receiver.Config{})
	perRequest := func(h http.Handler) float64 {
		mux := paymentsMux(h)
		const runs = 1000
		reqs := make([]*http.Request, runs+1) // AllocsPerRun warms up once
		recs := make([]*httptest.ResponseRecorder, runs+1)
		for i := range reqs {
			reqs[i], recs[i] = paymentRequest(i), httptest.NewRecorder()
		}
		next := 0
		return testing.AllocsPerRun(runs, func() {
			mux.ServeHTTP(recs[next], reqs[next])
			if recs[next].Code != http.StatusAccepted {
				t.Fatalf("status %d: %s", recs[next].Code, recs[next].Body)
			}
			next++
		})
	}
	added := perRequest(Middleware(r, WithAnonymous())(paymentsHandler)) - perRequest(paymentsHandler)
	if added > httpAllocBudget {
		t.Fatalf("the HTTP face adds %.1f allocations per request, budget %d", added, httpAllocBudget)
	}
	t.Logf("%.1f allocations added per request (budget %d)", added, httpAllocBudget)
}
