//go:build !race

package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// allocBudget is the most allocations the receiver may add to a unique
// message on the memory store, the store's own included (the bench's
// receiver-allocs target holds a router to the same budget). The race
// detector allocates on its own, hence the build tag.
const allocBudget = 10

func TestReceiverAllocationBudget(t *testing.T) {
	r, _ := newBenchReceiver(t)
	h := r.Middleware()(func(*message.Message) ([]*message.Message, error) { return nil, nil })
	ctx := handlerContext(t)

	const runs = 1000
	msgs := make([]*message.Message, runs+1) // AllocsPerRun warms up once
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), benchPayload(i))
		msgs[i].SetContext(ctx)
	}
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		if _, err := h(msgs[next]); err != nil {
			t.Fatal(err)
		}
		next++
	})
	if allocs > allocBudget {
		t.Fatalf("the receiver allocates %.1f times per unique message, budget %d", allocs, allocBudget)
	}
	t.Logf("%.1f allocations per unique message (budget %d)", allocs, allocBudget)
}

// httpAllocBudget is the most allocations the HTTP face may add to a
// request with a fresh key on the memory store: the held response and its
// frozen header, the body read once and handed on, the request's key and
// fingerprint, the context that carries the effect key, the request copy
// that carries the fencing token, the stored envelope, the store's record,
// and the response copied out to the client.
const httpAllocBudget = 23

func TestHTTPAllocationBudget(t *testing.T) {
	r, _ := newBenchReceiver(t)
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
	added := perRequest(r.HTTP(WithAnonymous())(paymentsHandler)) - perRequest(paymentsHandler)
	if added > httpAllocBudget {
		t.Fatalf("the HTTP face adds %.1f allocations per request, budget %d", added, httpAllocBudget)
	}
	t.Logf("%.1f allocations added per request (budget %d)", added, httpAllocBudget)
}
