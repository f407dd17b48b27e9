package app

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/problem"
)

// response is what send got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) replayed() bool { return r.header.Get(idempotencykey.ReplayedHeader) == "true" }

// send makes one request with the given headers (name, value pairs) through
// client and reads the whole answer.
func (r *running) send(t *testing.T, client *http.Client, method, path, body string, header ...string) response {
	t.Helper()
	got := testenv.Send(t, client, method, r.base+path, body, header...)
	return response{status: got.Status, header: got.Header, body: got.Body}
}

// 500 identical POSTs at once with one Idempotency-Key make one request and
// one charge. Each answer is the original 202, its replay, or 409.
func TestHTTPIdempotencyConcurrentPOSTs(t *testing.T) {
	const n = 500
	a := startApp(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	t.Cleanup(client.CloseIdleConnections)
	key, body := uuid.NewString(), flowtest.Body("req-"+uuid.NewString()[:8])

	start := make(chan struct{})
	responses := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			responses[i] = a.send(t, client, http.MethodPost, flowtest.CreatePath, body, "Idempotency-Key", key)
		})
	}
	close(start)
	wg.Wait()

	var originals, replays, conflicts int
	var original []byte
	for _, r := range responses {
		switch {
		case r.status == http.StatusAccepted && !r.replayed():
			originals++
			original = r.body
		case r.status == http.StatusAccepted:
			replays++
		case r.status == http.StatusConflict && r.header.Get("Retry-After") != "":
			conflicts++
		default:
			t.Errorf("unexpected answer %d %v: %s", r.status, r.header, r.body)
		}
	}
	t.Logf("%d concurrent POSTs with one key: %d original 202, %d replayed 202, %d 409", n, originals, replays, conflicts)
	if originals != 1 || originals+replays+conflicts != n {
		t.Fatalf("%d originals, %d replays, %d conflicts; want one original and %d answers", originals, replays, conflicts, n)
	}
	for _, r := range responses {
		if r.replayed() && !bytes.Equal(r.body, original) {
			t.Errorf("replayed body %q, want the original %q", r.body, original)
		}
	}
	waitFor(t, "the request charged and noticed", func() bool { return flowtest.Tally(t, a).Notices.Rows == 1 })
	if got, want := flowtest.Tally(t, a), flowtest.Want(1, 1); got.Requests != want.Requests || got.Charges != want.Charges || got.Notices != want.Notices {
		t.Errorf("tally = %+v, want one request, charged and noticed once", got)
	}
	for outcome, want := range map[string]int{"processed": 1, "duplicate": replays, "in_progress": conflicts} {
		if got := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", idempotencykey.Scope, "outcome", outcome); got != float64(want) {
			t.Errorf("http %s = %v, want %d", outcome, got, want)
		}
	}
}

// With API_KEYS set, the API needs a known key, and one client's
// Idempotency-Key never reaches another client's response.
func TestHTTPIdempotencyClientsIsolated(t *testing.T) {
	a := startApp(t, "API_KEYS=key-of-client-a-0123456789:client-a, key-of-client-b-0123456789:client-b")
	c := http.DefaultClient
	asA, asB := []string{"Authorization", "Bearer key-of-client-a-0123456789"}, []string{"Authorization", "Bearer key-of-client-b-0123456789"}
	key := []string{"Idempotency-Key", "shared-key"}
	req := flowtest.Body("req-" + uuid.NewString()[:8])

	for _, r := range []response{
		a.send(t, c, http.MethodPost, flowtest.CreatePath, req, key...),
		a.send(t, c, http.MethodPost, flowtest.CreatePath, req, append(key, "Authorization", "Bearer key-of-client-c-0123456789")...),
		a.send(t, c, http.MethodGet, "/v1/summary", ""),
	} {
		if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") ||
			r.header.Get("Content-Type") != problem.ContentType {
			t.Errorf("without a valid key: %d %v, want a 401 problem with WWW-Authenticate: Bearer", r.status, r.header)
		}
	}

	firstA := a.send(t, c, http.MethodPost, flowtest.CreatePath, req, append(key, asA...)...)
	firstB := a.send(t, c, http.MethodPost, flowtest.CreatePath, req, append(key, asB...)...)
	otherB := a.send(t, c, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-other"), append(key, asB...)...)
	againA := a.send(t, c, http.MethodPost, flowtest.CreatePath, req, append(key, asA...)...)
	if firstA.status != http.StatusAccepted || firstA.replayed() {
		t.Errorf("client A: %d replayed %v, want a new 202", firstA.status, firstA.replayed())
	}
	if firstB.status != http.StatusAccepted || firstB.replayed() {
		t.Errorf("client B with A's key: %d replayed %v, want its own 202, not A's", firstB.status, firstB.replayed())
	}
	if otherB.status != http.StatusUnprocessableEntity {
		t.Errorf("client B reusing its key for another request: %d, want 422", otherB.status)
	}
	if againA.status != http.StatusAccepted || !againA.replayed() || !bytes.Equal(againA.body, firstA.body) ||
		againA.header.Get("Location") != firstA.header.Get("Location") {
		t.Errorf("client A again: %d replayed %v %q, want the replay of %q", againA.status, againA.replayed(), againA.body, firstA.body)
	}
}

// The API's errors at the HTTP edge, as a client sees them.
func TestHTTPIdempotencyProblems(t *testing.T) {
	a := startApp(t)
	c := http.DefaultClient
	req := flowtest.Body("req-" + uuid.NewString()[:8])
	key := "key-" + uuid.NewString()
	for _, tc := range []struct {
		name   string
		body   string
		header []string
		status int
	}{
		{"no key", req, nil, http.StatusBadRequest},
		{"key too long", req, []string{"Idempotency-Key", strings.Repeat("k", 256)}, http.StatusBadRequest},
		{"first", req, []string{"Idempotency-Key", key}, http.StatusAccepted},
		{"same key, other request", flowtest.Body("req-other"), []string{"Idempotency-Key", key}, http.StatusUnprocessableEntity},
		{"invalid request is stored", `{}`, []string{"Idempotency-Key", key + "-bad"}, http.StatusBadRequest},
		{"body over the limit", strings.Repeat(" ", testdomain.MaxRequestBody+1), []string{"Idempotency-Key", key + "-big"},
			http.StatusRequestEntityTooLarge},
	} {
		r := a.send(t, c, http.MethodPost, flowtest.CreatePath, tc.body, tc.header...)
		if r.status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.status)
		}
		if r.status >= 400 && r.header.Get("Content-Type") != problem.ContentType {
			t.Errorf("%s: Content-Type %q, want a problem", tc.name, r.header.Get("Content-Type"))
		}
	}
	if r := a.send(t, c, http.MethodPost, flowtest.CreatePath, `{}`, "Idempotency-Key", key+"-bad"); !r.replayed() {
		t.Error("the stored 400 was not replayed")
	}
}

// A response over IDEMPOTENCY_MAX_BODY is served but not stored: its retry
// runs the handler again (and the request is still charged once).
func TestHTTPIdempotencyOversizeResponseNotStored(t *testing.T) {
	a := startApp(t, "IDEMPOTENCY_MAX_BODY=10")
	req, key := flowtest.Body("req-"+uuid.NewString()[:8]), uuid.NewString()
	for range 2 {
		r := a.send(t, http.DefaultClient, http.MethodPost, flowtest.CreatePath, req, "Idempotency-Key", key)
		if r.status != http.StatusAccepted || r.replayed() {
			t.Errorf("%d replayed %v, want a new 202", r.status, r.replayed())
		}
	}
	if n := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", idempotencykey.Scope, "outcome", "not_stored"); n != 2 {
		t.Errorf("not_stored = %v, want 2", n)
	}
	waitFor(t, "the request charged and noticed", func() bool { return flowtest.Tally(t, a).Notices.Rows == 1 })
	if got := flowtest.Tally(t, a); got.Charges.Rows != 1 {
		t.Errorf("tally = %+v, want one charge", got)
	}
}

func TestAPIKeysConfig(t *testing.T) {
	cfg, err := LoadConfig([]string{"API_KEYS=s3cret-of-client-a-01:client-a,pass:word-of-client-b-01:client-b"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", cfg)
	if out := b.String(); strings.Contains(out, "s3cret") || strings.Contains(out, "pass:word") ||
		!strings.Contains(out, "***:client-a,***:client-b") {
		t.Errorf("logged config: %s; want the keys masked and the clients shown", out)
	}
	keys, err := cfg.apiKeys()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := keys.Client("pass:word-of-client-b-01"); !ok || c != "client-b" {
		t.Errorf("key with a colon resolves to %q, %v; want client-b", c, ok)
	}
	for _, bad := range []string{"API_KEYS=s3cret-0123456789ab", "API_KEYS=s3cret-0123456789ab:", "API_KEYS=s3cret-0123456789ab:a,s3cret-0123456789ab:b", "API_KEYS=:a",
		"API_KEYS=s3cret:a",
		"IDEMPOTENCY_MAX_BODY=0"} {
		_, err := LoadConfig([]string{bad})
		name, _, _ := strings.Cut(bad, "=")
		if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("LoadConfig(%q) = %v, want an error naming %s without the key", bad, err, name)
		}
	}
}
