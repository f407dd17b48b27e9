// Package flowtest drives the test domain's flow (package testdomain)
// through a running service and checks what the service made of it: each
// request charged, noticed and receipted once, however often it came and
// on whichever broker and store. The service's own tests share these
// checks, those of app and those that start the service with apptest (the
// brokers' service tests in transport/<kind>), so the package imports no
// package of the service's composition (app).
//
// Its functions fail the test they are given. They wait by polling
// /metrics and GET /v1/summary (testenv.WaitFor), up to [Wait]; none
// sleeps to order what it checks.
package flowtest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
)

// Service is a running service with the test domain, as the checks reach
// it: apptest.Service is one.
type Service interface {
	// Get fetches path from the service's API, decoding a JSON body into
	// v when v is not nil, and returns the status.
	Get(t testing.TB, path string, v any) int
	// Post sends body to path of the service's API as JSON, with a fresh
	// Idempotency-Key unless header (name, value pairs) sets one, and
	// returns the status.
	Post(t testing.TB, path, body string, header ...string) int
	// Metric returns the sum of the counter or gauge name over the series
	// of the service's /metrics whose labels include every pair in labels.
	Metric(t testing.TB, name string, labels ...string) float64
}

// Wait is how long the checks wait for the service to handle what they
// sent.
const Wait = 20 * time.Second

// CreatePath is the path of [testdomain.CreatePattern].
const CreatePath = "/v1/charges"

// Body is the body of POST /v1/charges for the request id.
func Body(id string) string { return fmt.Sprintf(`{"id":%q,"amount":1250}`, id) }

// Tally is GET /v1/summary of s: what its ledger holds.
func Tally(t testing.TB, s Service) testdomain.Tally {
	t.Helper()
	var got testdomain.Tally
	if code := s.Get(t, "/v1/summary", &got); code != http.StatusOK {
		t.Fatalf("GET /v1/summary: status %d", code)
	}
	return got
}

// Want is the Tally of n requests (n ids) each charged, noticed and
// receipted once, that the API accepted posts times in all: each POST a
// request row. A request that came through the broker alone has none.
func Want(n, posts int) testdomain.Tally {
	once := testdomain.Counts{Rows: int64(n), IDs: int64(n)}
	want := testdomain.Tally{Charges: once, Notices: once, Receipts: once}
	if posts > 0 {
		want.Requests = testdomain.Counts{Rows: int64(posts), IDs: int64(n)}
	}
	return want
}

// Outcomes is the receiver's count of outcome in the route or face scope
// on s.
func Outcomes(t testing.TB, s Service, scope, outcome string) float64 {
	t.Helper()
	return s.Metric(t, "onceflow_receiver_outcomes_total", "scope", scope, "outcome", outcome)
}

// PostOK posts the request id to s, failing t unless it is accepted (202).
func PostOK(t testing.TB, s Service, id string, header ...string) {
	t.Helper()
	if code := s.Post(t, CreatePath, Body(id), header...); code != http.StatusAccepted {
		t.Fatalf("POST %s of %s: status %d, want 202", CreatePath, id, code)
	}
}
