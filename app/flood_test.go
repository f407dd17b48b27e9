package app

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// flood sends n POST /v1/charges with the body {} and a fresh key each,
// as client (none when empty), and counts the answers by status. Every
// answer below 500 is stored, the 400s of an invalid body included, so
// each one the service lets through creates a record.
func (r *running) flood(t *testing.T, n int, client string) map[int]int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	t.Cleanup(c.CloseIdleConnections)
	codes := map[int]int{}
	for i := range n {
		header := []string{"Idempotency-Key", "flood-" + strconv.Itoa(i) + "-" + uuid.NewString()}
		if client != "" {
			header = append(header, "Authorization", "Bearer "+client)
		}
		res := r.send(t, c, http.MethodPost, flowtest.CreatePath, `{}`, header...)
		if (res.status == http.StatusServiceUnavailable || res.status == http.StatusTooManyRequests) &&
			res.header.Get("Retry-After") == "" {
			t.Errorf("flood: %d without Retry-After", res.status)
		}
		codes[res.status]++
	}
	return codes
}

// publishRequest publishes the request id's event on the broker, as a
// producer other than the API would. On the in-process broker it returns
// once the message is acked.
func (r *running) publishRequest(t *testing.T, id string) {
	t.Helper()
	if err := r.transport.Publisher().Publish(testdomain.TopicRequested, testdomain.Event{ID: id, Amount: 1250}.Message()); err != nil {
		t.Errorf("publishing request %s: %v", id, err)
	}
}

// outcomes is the receiver's count of outcome in scope.
func (r *running) outcomes(t *testing.T, scope string, outcome receiver.Outcome) float64 {
	t.Helper()
	return flowtest.Outcomes(t, r, scope, string(outcome))
}

// A request is charged; a flood of invalid requests with fresh keys
// follows; the same request is sent again with a new key. The HTTP face's
// records are kept apart from the routes', so the flood cannot evict the
// request's records to make room, and a full store refuses new keys (503
// with Retry-After) rather than forget a record. The capacities are small
// so that the flood is short; the quota is off, to show the store alone.
func TestFloodCannotEvictAMemoryRecord(t *testing.T) {
	a := startApp(t, "STORE=memory", "MEMORY_MAX_HTTP_RECORDS=50", "MEMORY_MAX_RECORDS=50", "IDEMPOTENCY_CLIENT_RECORDS=0")
	c := http.DefaultClient
	req := flowtest.Body("req-42-" + uuid.NewString()[:8])
	if res := a.send(t, c, http.MethodPost, flowtest.CreatePath, req, "Idempotency-Key", "first"); res.status != http.StatusAccepted {
		t.Fatalf("request: %d %s", res.status, res.body)
	}
	waitFor(t, "the request charged, noticed and receipted", func() bool { return flowtest.Tally(t, a) == flowtest.Want(1, 1) })

	codes := a.flood(t, 200, "")
	t.Logf("flood of 200: %v", codes)
	if codes[http.StatusBadRequest] != 49 || codes[http.StatusServiceUnavailable] != 151 {
		t.Errorf("flood answers %v, want 49 stored 400s (the request holds the 50th record) and 151 503s", codes)
	}

	// The same request with a new key: refused while the HTTP records are
	// full; had it been let through, it must not be charged again.
	again := a.send(t, c, http.MethodPost, flowtest.CreatePath, req, "Idempotency-Key", "second")
	switch again.status {
	case http.StatusServiceUnavailable:
	case http.StatusAccepted:
		waitFor(t, "the copy handled", func() bool {
			return a.outcomes(t, testdomain.ChargeRoute, receiver.OutcomeProcessed)+
				a.outcomes(t, testdomain.ChargeRoute, receiver.OutcomeDuplicate) == 2
		})
	default:
		t.Errorf("the request again with a new key: %d %s", again.status, again.body)
	}
	// The first request's record is kept: a full store still answers it.
	if replay := a.send(t, c, http.MethodPost, flowtest.CreatePath, req, "Idempotency-Key", "first"); replay.status != http.StatusAccepted || !replay.replayed() {
		t.Errorf("the first request again: %d replayed=%v, want its 202 replayed", replay.status, replay.replayed())
	}
	if got := flowtest.Tally(t, a); got.Charges.Rows != 1 {
		t.Fatalf("tally after the flood = %+v: charged %d times, want once", got, got.Charges.Rows)
	}

	// The routes' records have a capacity of their own: the flood stopped
	// no message. A request published on the broker is charged.
	other := "req-broker-" + uuid.NewString()[:8]
	a.publishRequest(t, other)
	waitFor(t, "the published request charged", func() bool { return flowtest.Tally(t, a).Charges.Rows == 2 })
	if n := a.outcomes(t, idempotencykey.Scope, receiver.OutcomeStoreFull); n < 151 {
		t.Errorf("http store_full = %v, want every refusal counted", n)
	}
	if n := a.outcomes(t, testdomain.ChargeRoute, receiver.OutcomeStoreFull); n != 0 {
		t.Errorf("the charge route's store_full = %v, want 0", n)
	}
}

// When the routes' records fill the memory store, a message with a new
// key is retried and nacked, never poisoned and never run unguarded, and
// it is charged once records expire and make room.
func TestFullMemoryStoreDelaysMessages(t *testing.T) {
	// One request makes a record in each route: the first fills the store.
	routes := testdomain.Routes()
	a := startApp(t, "STORE=memory", "MEMORY_MAX_RECORDS="+strconv.Itoa(len(routes)), "DEDUP_TTL=3s")
	a.publishRequest(t, "req-1-"+uuid.NewString()[:8])
	waitFor(t, "the first request handled by every route", func() bool {
		var n float64
		for _, r := range routes {
			n += a.outcomes(t, r.Name, receiver.OutcomeProcessed)
		}
		return n == float64(len(routes))
	})

	// The in-process broker's Publish returns once the message is acked.
	published := make(chan struct{})
	go func() {
		defer close(published)
		a.publishRequest(t, "req-2-"+uuid.NewString()[:8])
	}()
	waitFor(t, "the second request refused while the store is full", func() bool {
		return a.outcomes(t, testdomain.ChargeRoute, receiver.OutcomeStoreFull) > 0
	})
	if got := flowtest.Tally(t, a); got.Charges.Rows != 1 {
		t.Fatalf("charges while the store is full = %d, want 1", got.Charges.Rows)
	}
	waitFor(t, "the second request charged once the first's records expired", func() bool {
		got := flowtest.Tally(t, a)
		return got.Notices.Rows == 2 && got.Receipts.Rows == 2
	})
	<-published
	if got := flowtest.Tally(t, a); got.Charges.Rows != 2 {
		t.Errorf("tally = %+v, want 2 charges", got)
	}
	if n := a.Metric(t, "onceflow_poisoned_messages_total"); n != 0 {
		t.Errorf("%v messages poisoned, want none", n)
	}
}

// On Redis and PostgreSQL nothing caps the records, so a flood would
// grow them until the store is full and fail-closed stops every handler.
// The client quota refuses it with 429 and Retry-After before the store is
// asked; other clients keep their own quota.
func TestFloodIsRefusedByTheClientQuota(t *testing.T) {
	for _, name := range []string{"redis", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, append(storeEnvs(t)[name](t), "API_KEYS=key-of-client-a-0123456789:client-a,key-of-client-b-0123456789:client-b",
				"IDEMPOTENCY_CLIENT_RECORDS=20", "IDEMPOTENCY_CLIENT_WINDOW=1h")...)
			c := http.DefaultClient
			asA, asB := []string{"Authorization", "Bearer key-of-client-a-0123456789"}, []string{"Authorization", "Bearer key-of-client-b-0123456789"}
			if res := a.send(t, c, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-a-"+uuid.NewString()[:8]),
				append(asA, "Idempotency-Key", uuid.NewString())...); res.status != http.StatusAccepted {
				t.Fatalf("request: %d %s", res.status, res.body)
			}

			codes := a.flood(t, 200, "key-of-client-a-0123456789")
			t.Logf("flood of 200: %v", codes)
			if codes[http.StatusBadRequest] != 19 || codes[http.StatusTooManyRequests] != 181 {
				t.Errorf("flood answers %v, want 19 stored 400s (the request took the 20th record) and 181 429s", codes)
			}
			if n := a.outcomes(t, idempotencykey.Scope, receiver.OutcomeProcessed); n != 20 {
				t.Errorf("records the HTTP face created = %v, want the 20 of the quota", n)
			}
			if n := a.outcomes(t, idempotencykey.Scope, receiver.OutcomeRateLimited); n != 181 {
				t.Errorf("rate_limited = %v, want 181", n)
			}
			over := a.send(t, c, http.MethodPost, flowtest.CreatePath, `{}`, append(asA, "Idempotency-Key", uuid.NewString())...)
			if wait, err := strconv.Atoi(over.header.Get("Retry-After")); over.status != http.StatusTooManyRequests || err != nil || wait < 170 {
				t.Errorf("over the quota: %d Retry-After %q, want 429 and the wait for the next record (3 minutes)",
					over.status, over.header.Get("Retry-After"))
			}

			// Another client is not held back by the flood.
			if res := a.send(t, c, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-b-"+uuid.NewString()[:8]),
				append(asB, "Idempotency-Key", uuid.NewString())...); res.status != http.StatusAccepted {
				t.Fatalf("another client's request: %d %s", res.status, res.body)
			}
			waitFor(t, "both requests charged", func() bool {
				return a.outcomes(t, testdomain.ChargeRoute, receiver.OutcomeProcessed) == 2
			})
		})
	}
}

// One client floods the memory store with fresh keys: it holds at most its
// MEMORY_HTTP_CLIENT_SHARE of the HTTP records, then gets 429 with a
// Retry-After of when its own soonest record expires, and another client
// is still served. The quota is off, to show the share alone.
func TestOneClientCannotFillTheMemoryStore(t *testing.T) {
	const greedy, other = "greedy-kx7Q-29fL-mW4p", "other-Rt5v-83nB-qZ6c"
	a := startApp(t, "STORE=memory", "MEMORY_MAX_HTTP_RECORDS=40", "MEMORY_HTTP_CLIENT_SHARE=25",
		"API_KEYS="+greedy+":client-greedy,"+other+":client-other", "IDEMPOTENCY_CLIENT_RECORDS=0", "DEDUP_TTL=1h")
	codes := a.flood(t, 100, greedy)
	t.Logf("flood of 100: %v", codes)
	if codes[http.StatusBadRequest] != 10 || codes[http.StatusTooManyRequests] != 90 {
		t.Errorf("flood answers %v, want 10 stored 400s (25%% of 40 records) and 90 429s", codes)
	}
	over := a.send(t, http.DefaultClient, http.MethodPost, flowtest.CreatePath, `{}`,
		"Authorization", "Bearer "+greedy, "Idempotency-Key", uuid.NewString())
	if wait, err := strconv.Atoi(over.header.Get("Retry-After")); over.status != http.StatusTooManyRequests || err != nil || wait < 3500 {
		t.Errorf("over its share: %d Retry-After %q, want 429 and the hour until its first record expires",
			over.status, over.header.Get("Retry-After"))
	}
	if res := a.send(t, http.DefaultClient, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-other-"+uuid.NewString()[:8]),
		"Authorization", "Bearer "+other, "Idempotency-Key", uuid.NewString()); res.status != http.StatusAccepted {
		t.Fatalf("another client's request: %d %s", res.status, res.body)
	}
	waitFor(t, "the other client's request charged", func() bool {
		return a.outcomes(t, testdomain.ChargeRoute, receiver.OutcomeProcessed) == 1
	})
}
