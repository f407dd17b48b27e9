package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// The operators' keys: alice's and bob's.
const (
	adminKey = "s3cret-admin-key"
	bobKey   = "bobs-own-admin-key-0123"
)

// fixture is a receiver and the admin API on one memory store, with a
// completed record (charge pay-1), an in-progress one (pay-2) and
// client-a's Idempotency-Key k-1 on POST /v1/charges.
type fixture struct {
	store    *memory.Store
	receiver *receiver.Receiver
	api      http.Handler // the payments route behind its HTTP face
	admin    *httptest.Server
	logs     *testenv.Buffer
	runs     map[string]int
	mu       sync.Mutex
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{store: memory.New(memory.Config{}), logs: &testenv.Buffer{}, runs: map[string]int{}}
	t.Cleanup(func() { _ = f.store.Close() })
	var err error
	if f.receiver, err = receiver.New(receiver.Config{Store: f.store}); err != nil {
		t.Fatal(err)
	}
	svc, err := admin.New(admin.Config{
		Store: f.store, Handlers: []string{"charge", "notify"},
		HTTPRoutes: []string{"POST /v1/charges"}, Clients: []string{"client-a", "client-b"},
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := svc.Handler(map[string]string{adminKey: "alice", bobKey: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	f.admin = httptest.NewServer(h)
	t.Cleanup(f.admin.Close)

	keys, _ := apikey.NewKeys(map[string]string{"key-a": "client-a", "key-b": "client-b"})
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", idempotencykey.Middleware(f.receiver)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, _ := apikey.ClientFromContext(r.Context())
		f.ran(client)
		w.WriteHeader(http.StatusCreated)
	})))
	f.api = apikey.Authenticate(keys, nil)(mux)

	f.execute(t, "pay-1")
	if _, err := f.store.Claim(context.Background(), receiver.RecordKey("charge", "pay-2"), nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if code := f.pay("key-a", "k-1"); code != http.StatusCreated {
		t.Fatalf("payment: %d", code)
	}
	return f
}

func (f *fixture) ran(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[what]++
}

func (f *fixture) count(what string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[what]
}

// execute delivers a message with key to charge.
func (f *fixture) execute(t *testing.T, key string) {
	t.Helper()
	_, err := f.receiver.Execute(context.Background(), "charge", key, nil, func(context.Context) ([]byte, error) {
		f.ran(key)
		return []byte("result"), nil
	})
	if err != nil {
		t.Fatalf("Execute(%q): %v", key, err)
	}
}

// pay sends POST /v1/charges as the client of apiKey with Idempotency-Key key.
func (f *fixture) pay(apiKey, key string) int {
	req := httptest.NewRequest(http.MethodPost, "/v1/charges", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set(idempotencykey.Header, key)
	rec := httptest.NewRecorder()
	f.api.ServeHTTP(rec, req)
	return rec.Code
}

// call sends an admin request and returns its status and body.
func (f *fixture) call(t *testing.T, method, path string, q url.Values, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.admin.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK && res.Header.Get("Content-Type") != problem.ContentType {
		t.Fatalf("%s %s: %d with Content-Type %q, want problem+json", method, path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res.StatusCode, body
}

func (f *fixture) state(t *testing.T, key string) string {
	t.Helper()
	e, err := f.store.Lookup(context.Background(), key)
	if errors.Is(err, stores.ErrNotFound) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	return e.Status.String()
}

func TestAdminRefusesBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name, method, path string
		q                  url.Values
		header             map[string]string
		status             int
		detail             string
	}{
		{"no api key", "GET", "/admin/keys/charge", url.Values{"key": {"pay-1"}},
			map[string]string{"Authorization": ""}, 401, "API key is required"},
		{"wrong api key", "POST", "/admin/keys/charge/evict", url.Values{"key": {"pay-1"}},
			map[string]string{"Authorization": "Bearer " + adminKey + "x"}, 401, "not valid"},
		{"unknown handler", "POST", "/admin/keys/refund/evict", url.Values{"key": {"pay-1"}},
			nil, 400, `unknown handler "refund": use one of charge, notify, http`},
		{"empty key", "POST", "/admin/keys/charge/release", url.Values{"force": {"true"}}, nil, 400, "key is empty"},
		{"bad force", "POST", "/admin/keys/charge/release", url.Values{"key": {"pay-2"}, "force": {"yes"}},
			nil, 400, `force="yes"`},
		{"client on a message handler", "GET", "/admin/keys/charge", url.Values{"key": {"pay-1"}, "client": {"client-a"}},
			nil, 400, "apply to handler"},
		{"another client's key", "POST", "/admin/keys/http/evict", url.Values{"key": {"k-1"}, "client": {"client-b"}},
			nil, 404, "no live record"},
		{"unknown client", "POST", "/admin/keys/http/evict", url.Values{"key": {"k-1"}, "client": {"client-z"}},
			nil, 400, `unknown client "client-z"`},
		{"no client", "GET", "/admin/keys/http", url.Values{"key": {"k-1"}}, nil, 400, "client is empty"},
		{"malformed idempotency key", "GET", "/admin/keys/http", url.Values{"key": {`"k-1`}, "client": {"client-a"}},
			nil, 400, "not an sf-string"},
		{"unknown route", "GET", "/admin/keys/http", url.Values{"key": {"k-1"}, "client": {"client-a"}, "route": {"POST /v1/x"}},
			nil, 400, "unknown route"},
		{"no such route", "DELETE", "/admin/keys/charge", url.Values{"key": {"pay-1"}}, nil, 404, "no such admin route"},
		{"absent key", "GET", "/admin/keys/charge", url.Values{"key": {"pay-9"}}, nil, 404, "no live record"},
		{"release without force", "POST", "/admin/keys/charge/release", url.Values{"key": {"pay-2"}},
			nil, 409, "held by its owner until"},
		{"release of a completed key", "POST", "/admin/keys/charge/release", url.Values{"key": {"pay-1"}, "force": {"true"}},
			nil, 409, "evict it"},
		{"evict of an in-progress key", "POST", "/admin/keys/charge/evict", url.Values{"key": {"pay-2"}},
			nil, 409, "release it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.call(t, tc.method, tc.path, tc.q, tc.header)
			var d problem.Details
			if err := json.Unmarshal(body, &d); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if status != tc.status || d.Status != tc.status || !strings.Contains(d.Detail, tc.detail) {
				t.Fatalf("%d %q, want %d containing %q", status, d.Detail, tc.status, tc.detail)
			}
		})
	}
	// Nothing changed.
	for key, want := range map[string]string{
		receiver.RecordKey("charge", "pay-1"): "completed",
		receiver.RecordKey("charge", "pay-2"): "in_progress",
		receiver.RecordKey("http", idempotencykey.RequestKey("client-a", "POST", "POST /v1/charges", "k-1")): "completed",
	} {
		if got := f.state(t, key); got != want {
			t.Errorf("record %s is %s, want %s", key, got, want)
		}
	}
	if strings.Contains(f.logs.String(), adminKey) {
		t.Error("the log shows the admin API key")
	}
}

func TestAdminActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	decode := func(status int, body []byte) admin.Record {
		t.Helper()
		var r admin.Record
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := decode(f.call(t, "GET", "/admin/keys/charge", url.Values{"key": {"pay-1"}}, nil))
	if r.State != "completed" || r.ResultBytes != len("result") || r.ExpiresAt == nil || r.LeaseUntil != nil {
		t.Fatalf("get pay-1 = %+v", r)
	}

	// Evict: the next copy runs the handler again.
	r = decode(f.call(t, "POST", "/admin/keys/charge/evict", url.Values{"key": {"pay-1"}}, nil))
	if r.State != "completed" || r.Key != "pay-1" {
		t.Fatalf("evict pay-1 = %+v", r)
	}
	f.execute(t, "pay-1")
	if n := f.count("pay-1"); n != 2 {
		t.Fatalf("pay-1 ran %d times after the evict, want 2", n)
	}

	// Forced release: the key can be claimed at once.
	r = decode(f.call(t, "POST", "/admin/keys/charge/release", url.Values{"key": {"pay-2"}, "force": {"true"}}, nil))
	if r.State != "in_progress" || r.LeaseUntil == nil {
		t.Fatalf("release pay-2 = %+v", r)
	}
	f.execute(t, "pay-2")
	if n := f.count("pay-2"); n != 1 {
		t.Fatalf("pay-2 ran %d times after the release, want 1", n)
	}

	// The HTTP face: client-a's key, quoted or bare, on the only route.
	r = decode(f.call(t, "GET", "/admin/keys/http", url.Values{"key": {`"k-1"`}, "client": {"client-a"}}, nil))
	if r.Route != "POST /v1/charges" || r.Key != "k-1" || r.State != "completed" {
		t.Fatalf("get http k-1 = %+v", r)
	}
	decode(f.call(t, "POST", "/admin/keys/http/evict", url.Values{"key": {"k-1"}, "client": {"client-a"}}, nil))
	if code := f.pay("key-a", "k-1"); code != http.StatusCreated || f.count("client-a") != 2 {
		t.Fatalf("after the evict the retry got %d and the handler ran %d times, want 201 and 2", code, f.count("client-a"))
	}

	// Every action is logged with who asked and from where.
	logs := f.logs.String()
	for _, want := range []string{`"action":"evict","actor":"alice","remote_addr":"127.0.0.1:`, `"action":"release","actor":"alice"`, `"force":"true"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

// takenOver is a memory store on which, right after every Lookup, the key's
// record is replaced by a new owner's claim: what the admin read is gone
// by the time it removes it.
type takenOver struct{ *memory.Store }

func (s takenOver) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	e, err := s.Store.Lookup(ctx, key)
	if err == nil {
		if err := s.Store.Remove(ctx, key, e); err != nil {
			return e, err
		}
		if _, err := s.Store.Claim(ctx, key, nil, time.Hour); err != nil {
			return e, err
		}
	}
	return e, err
}

// A record that changed between the read and the removal is left alone.
func TestAdminLeavesARecordThatChanged(t *testing.T) {
	t.Parallel()
	m := memory.New(memory.Config{})
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()
	key := receiver.RecordKey("charge", "pay-1")
	if _, err := m.Claim(ctx, key, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	svc, err := admin.New(admin.Config{Store: takenOver{m}, Handlers: []string{"charge"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Release(ctx, admin.Target{Handler: "charge", Key: "pay-1"}, true)
	if problem.KindOf(err) != problem.Conflict || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("Release of a record taken over meanwhile: %v, want a conflict", err)
	}
	if e, err := m.Lookup(ctx, key); err != nil || e.Status != stores.InProgress {
		t.Fatalf("the new owner's record: %v, %v; want it kept", e.Status, err)
	}
}

// A store outage is a 503 to retry, not a 404 that would say the key is
// free.
func TestAdminStoreDownIsUnavailable(t *testing.T) {
	t.Parallel()
	m := memory.New(memory.Config{})
	_ = m.Close()
	svc, err := admin.New(admin.Config{Store: m, Handlers: []string{"charge"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Get(context.Background(), admin.Target{Handler: "charge", Key: "pay-1"})
	if problem.KindOf(err) != problem.Unavailable || !errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("Get on a closed store: %v, want unavailable", err)
	}
}

// The Client sends what `onceflow keys` asks for, force included, and
// turns a problem into an error that carries its status and detail.
func TestClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := admin.Client{BaseURL: f.admin.URL, APIKey: bobKey}
	ctx := context.Background()
	held := admin.Target{Handler: "charge", Key: "pay-2"}
	if _, err := c.Release(ctx, held, false); err == nil || !strings.HasPrefix(err.Error(), "409 Conflict: the key is held by its owner until") {
		t.Fatalf("unforced release: %v", err)
	}
	if r, err := c.Release(ctx, held, true); err != nil || r.State != "in_progress" {
		t.Fatalf("forced release: %+v, %v", r, err)
	}
	if _, err := c.Get(ctx, held); err == nil || !strings.HasPrefix(err.Error(), "404 Not Found: no live record") {
		t.Fatalf("get after the release: %v", err)
	}
	if r, err := c.Evict(ctx, admin.Target{Handler: "http", Client: "client-a", Key: "k-1"}); err != nil || r.Route != "POST /v1/charges" {
		t.Fatalf("evict of an Idempotency-Key: %+v, %v", r, err)
	}
	if !strings.Contains(f.logs.String(), `"actor":"bob"`) {
		t.Error("the log lacks the actor whose key the client sent")
	}
}
