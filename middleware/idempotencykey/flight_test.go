package idempotencykey

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// blockingFixture's handler signals started, then waits for finish before
// answering 201.
func blockingFixture(t *testing.T, cfg receiver.Config) (f *httpFixture, started, finish chan struct{}) {
	started, finish = make(chan struct{}, 1), make(chan struct{})
	f = newHTTPFixture(t, cfg, nil, func(w http.ResponseWriter, r *http.Request, run int32) {
		started <- struct{}{}
		<-finish
		thingHandler(w, r, run)
	})
	return f, started, finish
}

// goDo sends rq in the background.
func (f *httpFixture) goDo(rq request) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- f.do(rq) }()
	return done
}

func TestHTTPInFlightIsConflict(t *testing.T) {
	f, started, finish := blockingFixture(t, receiver.Config{})
	first := f.goDo(post("/things/1", "k", "A"))
	<-started

	w := f.do(post("/things/1", "k", "A"))
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" {
		t.Errorf("while in flight: %d Retry-After %q, want 409 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if w := f.do(post("/things/1", "k", "B")); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("other body while in flight: %d, want 422", w.Code)
	}
	close(finish)
	if w := <-first; w.Code != http.StatusCreated {
		t.Fatalf("first: %d, want 201", w.Code)
	}
	if w := f.do(post("/things/1", "k", "A")); w.Code != http.StatusCreated || w.Header().Get(ReplayedHeader) != "true" {
		t.Errorf("after completion: %d replayed %q, want a 201 replay", w.Code, w.Header().Get(ReplayedHeader))
	}
}

// Under the Wait policy a retry waits for the first response and replays it.
func TestHTTPWaitPolicyReplays(t *testing.T) {
	f, started, finish := blockingFixture(t, receiver.Config{OnInProgress: receiver.Wait, Wait: receivertest.WaitTimeout})
	first := f.goDo(post("/things/1", "k", "A"))
	<-started
	claims := f.rec.OpCount("claim")
	second := f.goDo(post("/things/1", "k", "A"))
	f.rec.Await(t, "the retry to poll", func() bool { return f.rec.OpCount("claim") >= claims+2 })
	close(finish)

	w1, w2 := <-first, <-second
	if w2.Code != http.StatusCreated || w2.Header().Get(ReplayedHeader) != "true" || w2.Body.String() != w1.Body.String() {
		t.Errorf("waiting retry: %d replayed %q body %s; want the replay of %s",
			w2.Code, w2.Header().Get(ReplayedHeader), w2.Body, w1.Body)
	}
	if n := f.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// Under the Wait policy a retry that outwaits the bound gets 409.
func TestHTTPWaitPolicyBounded(t *testing.T) {
	f, started, finish := blockingFixture(t, receiver.Config{OnInProgress: receiver.Wait, Wait: 20 * time.Millisecond})
	defer close(finish)
	_ = f.goDo(post("/things/1", "k", "A"))
	<-started
	if w := f.do(post("/things/1", "k", "A")); w.Code != http.StatusConflict {
		t.Errorf("after waiting: %d, want 409", w.Code)
	}
}

// A panicking handler releases its key, and the panic goes on to the
// server (or a recoverer).
func TestHTTPPanicReleases(t *testing.T) {
	f := newHTTPFixture(t, receiver.Config{}, nil, func(w http.ResponseWriter, r *http.Request, run int32) {
		if run == 1 {
			_, _ = w.Write([]byte("partial"))
			panic("boom")
		}
		thingHandler(w, r, run)
	})
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the handler's panic", p)
			}
		}()
		f.do(post("/things/1", "k", "A"))
	}()
	if w := f.do(post("/things/1", "k", "A")); w.Code != http.StatusCreated || w.Header().Get(ReplayedHeader) != "" {
		t.Errorf("retry after panic: %d replayed %q, want a new 201", w.Code, w.Header().Get(ReplayedHeader))
	}
	if f.rec.Count(receiver.OutcomeFailed) != 1 || f.rec.Count(receiver.OutcomeProcessed) != 1 {
		t.Errorf("outcomes %v, want one failed and one processed", f.rec.Outcomes())
	}
}

// A response over the stored limit reaches the client whole, is counted
// not_stored, and leaves the key free.
func TestHTTPOversizeResponseNotStored(t *testing.T) {
	const limit = 1 << 10
	f := newHTTPFixture(t, receiver.Config{}, nil, func(w http.ResponseWriter, r *http.Request, run int32) {
		w.Header().Set("X-Run", string(rune('0'+run)))
		for range 3 {
			_, _ = w.Write(make([]byte, limit))
		}
	}, WithMaxStoredResponse(limit))
	for run := 1; run <= 2; run++ {
		w := f.do(post("/things/1", "k", "A"))
		if w.Code != http.StatusOK || w.Body.Len() != 3*limit || w.Header().Get("X-Run") != string(rune('0'+run)) {
			t.Errorf("request %d: %d with %d bytes from run %s; want 200, %d bytes, run %d",
				run, w.Code, w.Body.Len(), w.Header().Get("X-Run"), 3*limit, run)
		}
	}
	if n := f.rec.Count(receiver.OutcomeNotStored); n != 2 {
		t.Errorf("not_stored = %d, want 2 (outcomes %v)", n, f.rec.Outcomes())
	}
}

// The handler runs with the fencing token, and reads the body the face read.
func TestHTTPHandlerSeesTokenAndBody(t *testing.T) {
	f := newHTTPFixture(t, receiver.Config{}, nil, func(w http.ResponseWriter, r *http.Request, run int32) {
		if _, ok := receiver.TokenFromContext(r.Context()); !ok {
			t.Error("no fencing token in the handler's context")
		}
		thingHandler(w, r, run)
	})
	w := f.do(post("/things/1", "k", "the body"))
	if want := `{"run":1,"id":"1","body":"the body"}`; w.Body.String() != want {
		t.Errorf("body %s, want %s", w.Body, want)
	}
}
