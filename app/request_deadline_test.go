package app

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// On the in-process transport a request that publishes waits for its
// message's handler, and no longer than HANDLER_TIMEOUT: with the provider
// unreachable, the handler fails on and on, the request is answered 503,
// as a problem, and the service still stops within SHUTDOWN_TIMEOUT with
// another such request in flight.
func TestRequestWaitsNoLongerThanHandlerTimeout(t *testing.T) {
	a := startApp(t, "TRANSPORT=gochannel", "HANDLER_TIMEOUT=1s", "SHUTDOWN_TIMEOUT=5s",
		testdomain.ProviderSetting+"=http://"+testenv.ClosedAddr(t))
	client := &http.Client{Timeout: 20 * time.Second} // a client's patience: without the bound, the request outwaits it
	got := a.send(t, client, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-"+uuid.NewString()[:8]),
		"Idempotency-Key", uuid.NewString())
	if got.status != http.StatusServiceUnavailable || got.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("answer %d %s: %s; want a 503 problem", got.status, got.header.Get("Content-Type"), got.body)
	}

	failed := func() float64 {
		return a.Metric(t, "onceflow_receiver_outcomes_total", "scope", testdomain.ChargeRoute, "outcome", string(receiver.OutcomeFailed))
	}
	before := failed()
	inFlight := make(chan response, 1)
	go func() {
		inFlight <- a.send(t, client, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-"+uuid.NewString()[:8]),
			"Idempotency-Key", uuid.NewString())
	}()
	waitFor(t, "the second request's message failing", func() bool { return failed() > before })
	if err := a.stop(); err != nil {
		t.Fatalf("stopping with a request in flight: %v", err)
	}
	if got := <-inFlight; got.status != http.StatusServiceUnavailable {
		t.Errorf("the request in flight at shutdown: %d %s, want 503", got.status, got.body)
	}
}
