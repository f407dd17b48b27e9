package admin_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores/memory"
)

// newClock is a settable clock for [admin.Throttle.Now].
func newClock() *testenv.Clock { return testenv.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// authFixture is the admin API of alice and bob on an empty memory store,
// its log and its counts of refusals.
type authFixture struct {
	h                   http.Handler
	logs                *testenv.Buffer
	failures, throttled atomic.Int32
}

func newAuthFixture(t *testing.T, th admin.Throttle) *authFixture {
	t.Helper()
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	f := &authFixture{logs: &testenv.Buffer{}}
	svc, err := admin.New(admin.Config{Store: store, Handlers: []string{"charge"},
		Logger:        slog.New(slog.NewJSONHandler(f.logs, nil)),
		OnAuthFailure: func() { f.failures.Add(1) }, OnThrottled: func() { f.throttled.Add(1) },
		Throttle: th})
	if err != nil {
		t.Fatal(err)
	}
	if f.h, err = svc.Handler(map[string]string{adminKey: "alice", bobKey: "bob"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// call sends an admin request from addr with authorization (none when
// "") and the extra headers, name and value.
func (f *authFixture) call(method, addr, authorization string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/admin/keys/charge?key=pay-1", nil)
	if method == http.MethodPost {
		req = httptest.NewRequest(method, "/admin/keys/charge/evict?key=pay-1", nil)
	}
	req.RemoteAddr = addr
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return w
}

// logLines decodes the log lines whose msg is msg.
func (f *authFixture) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		var m map[string]any
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// The audit log names the operator whose key made the request, whatever
// the request says of itself: an X-Admin-Actor header is not an identity.
func TestAdminActorIsTheKeysOwner(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t, admin.Throttle{})
	for key, want := range map[string]string{adminKey: "alice", bobKey: "bob"} {
		f.call(http.MethodPost, "192.0.2.7:51234", "Bearer "+key, "X-Admin-Actor", "security-team")
		lines := f.logLines(t, "admin action refused") // no such record: refused after authentication
		if len(lines) == 0 || lines[len(lines)-1]["actor"] != want {
			t.Errorf("with %s's key the log says:\n%s\nwant actor %q", want, f.logs, want)
		}
	}
	if strings.Contains(f.logs.String(), "security-team") {
		t.Errorf("the log shows the X-Admin-Actor header:\n%s", f.logs)
	}
}

// After Burst wrong keys a source gets 429 with Retry-After, its right key
// too, while another source is served; it regains one attempt every Every.
func TestAdminThrottlesWrongKeysPerSource(t *testing.T) {
	t.Parallel()
	clk := newClock()
	f := newAuthFixture(t, admin.Throttle{Burst: 3, Every: 10 * time.Second, Now: clk.Now})
	const mallory, other = "192.0.2.7:1000", "198.51.100.9:2000"
	for i := range 3 {
		if w := f.call(http.MethodGet, mallory, "Bearer guess-0123456789abcdef"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, w.Code)
		}
	}
	throttled := func(what string, w *httptest.ResponseRecorder, retryAfter string) {
		t.Helper()
		var d problem.Details
		_ = json.Unmarshal(w.Body.Bytes(), &d)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Content-Type") != problem.ContentType ||
			w.Header().Get("Retry-After") != retryAfter || !strings.Contains(d.Detail, "too many failed authentications") {
			t.Errorf("%s: %d Retry-After %q %s, want a 429 problem with Retry-After %s", what, w.Code, w.Header().Get("Retry-After"), w.Body, retryAfter)
		}
	}
	throttled("4th wrong key", f.call(http.MethodGet, mallory, "Bearer guess-0123456789abcdef"), "10")
	throttled("the right key from the throttled source", f.call(http.MethodGet, "192.0.2.7:1001", "Bearer "+adminKey), "10")
	if w := f.call(http.MethodGet, other, "Bearer "+adminKey); w.Code != http.StatusNotFound { // no such record: served
		t.Errorf("the right key from another source: %d, want 404", w.Code)
	}
	if w := f.call(http.MethodGet, other, "Bearer guess-0123456789abcdef"); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key from another source: %d, want 401", w.Code)
	}

	clk.Add(4 * time.Second)
	throttled("4s later", f.call(http.MethodGet, mallory, "Bearer guess-0123456789abcdef"), "6")
	clk.Add(6 * time.Second) // one attempt regained
	if w := f.call(http.MethodGet, mallory, "Bearer guess-0123456789abcdef"); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key after Every: %d, want 401", w.Code)
	}
	throttled("the next one", f.call(http.MethodGet, mallory, "Bearer guess-0123456789abcdef"), "10")
	clk.Add(10 * time.Second)
	for i := range 5 { // a right key takes no attempt
		if w := f.call(http.MethodGet, mallory, "Bearer "+adminKey); w.Code != http.StatusNotFound {
			t.Fatalf("right key %d after Every: %d, want 404", i+1, w.Code)
		}
	}
	if n, m := f.failures.Load(), f.throttled.Load(); n != 5 || m != 4 {
		t.Errorf("%d failures and %d throttled counted, want 5 and 4", n, m)
	}
}

// Many wrong keys at once from one source get no more answers than one
// after another would: Burst 401s, the rest 429.
func TestAdminThrottleHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	clk := newClock()
	f := newAuthFixture(t, admin.Throttle{Burst: 5, Every: time.Hour, Now: clk.Now})
	var wg sync.WaitGroup
	var unauthorized, tooMany atomic.Int32
	for range 100 {
		wg.Go(func() {
			switch f.call(http.MethodGet, "192.0.2.7:1000", "Bearer guess-0123456789abcdef").Code {
			case http.StatusUnauthorized:
				unauthorized.Add(1)
			case http.StatusTooManyRequests:
				tooMany.Add(1)
			}
		})
	}
	wg.Wait()
	if u, m := unauthorized.Load(), tooMany.Load(); u != 5 || m != 95 {
		t.Errorf("%d answered 401 and %d 429, want 5 and 95", u, m)
	}
}

// The throttle remembers Sources sources, the most recent: its memory is
// bounded, and a source it forgot starts again with a full allowance.
func TestAdminThrottleRemembersBoundedSources(t *testing.T) {
	t.Parallel()
	clk := newClock()
	f := newAuthFixture(t, admin.Throttle{Burst: 1, Every: time.Hour, Sources: 2, Now: clk.Now})
	wrong := func(addr string) int { return f.call(http.MethodGet, addr, "Bearer guess-0123456789abcdef").Code }
	if a, b := wrong("192.0.2.1:1"), wrong("192.0.2.1:2"); a != http.StatusUnauthorized || b != http.StatusTooManyRequests {
		t.Fatalf("source 1: %d then %d, want 401 then 429", a, b)
	}
	wrong("192.0.2.2:1")
	wrong("192.0.2.3:1") // source 1, the least recently seen, is forgotten
	if code := wrong("192.0.2.1:3"); code != http.StatusUnauthorized {
		t.Errorf("a forgotten source: %d, want 401 (a full allowance)", code)
	}
}

// Refused authentications are counted one by one, but logged once a
// minute per source at most, with how many there were since that
// source's previous line; the key never shows.
func TestAdminLogsRefusedKeysWithoutAFlood(t *testing.T) {
	t.Parallel()
	clk := newClock()
	f := newAuthFixture(t, admin.Throttle{Burst: 3, Every: time.Hour, Now: clk.Now})
	for _, auth := range []string{"", "Bearer guess-" + adminKey, "Basic " + adminKey, "Bearer guess-2", "Bearer guess-3"} {
		f.call(http.MethodGet, "192.0.2.7:51234", auth) // 3 refused for their keys, then 2 throttled
	}
	f.call(http.MethodGet, "198.51.100.9:1", "Bearer guess-4")
	clk.Add(time.Minute)
	f.call(http.MethodGet, "192.0.2.7:51235", "Bearer guess-5")

	lines := f.logLines(t, "admin authentication refused")
	type line struct {
		source            string
		failed, throttled float64
	}
	var got []line
	for _, l := range lines {
		failed, _ := l["failed"].(float64)
		throttled, _ := l["throttled"].(float64)
		got = append(got, line{l["source"].(string), failed, throttled})
	}
	want := []line{{"192.0.2.7", 1, 0}, {"198.51.100.9", 1, 0}, {"192.0.2.7", 2, 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("log lines %v, want %v:\n%s", got, want, f.logs)
	}
	if n, m := f.failures.Load(), f.throttled.Load(); n != 4 || m != 3 {
		t.Errorf("%d failures and %d throttled counted, want 4 and 3", n, m)
	}
	if strings.Contains(f.logs.String(), adminKey) || strings.Contains(f.logs.String(), "guess-") {
		t.Error("the log shows a key")
	}
}

// A key that cannot be a random secret is refused, and so is an operator
// with two keys; the error names the operator, never the key.
func TestAdminRefusesWeakKeys(t *testing.T) {
	t.Parallel()
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	svc, err := admin.New(admin.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range []map[string]string{
		nil,
		{"": "alice"},
		{"adm1n": "alice"},
		{strings.Repeat("k", admin.MinAPIKeyLen-1): "alice"},
		{strings.Repeat("k", admin.MinAPIKeyLen): "alice"},
		{"abababababababab": "alice"},
		{adminKey: "alice", bobKey: "alice"},
		{adminKey: ""},
	} {
		_, err := svc.Handler(keys)
		if err == nil {
			t.Errorf("Handler(%q) accepted it", keys)
			continue
		}
		for k := range keys {
			if len(k) > 4 && strings.Contains(err.Error(), k) {
				t.Errorf("Handler(%q): %q shows the key", keys, err)
			}
		}
	}
	if _, err := svc.Handler(map[string]string{"0123456789abcdef": "alice"}); err != nil {
		t.Errorf("Handler(a key of %d characters, all different): %v", admin.MinAPIKeyLen, err)
	}
}

// A source is the connection's peer address, whatever headers say; an
// IPv6 address by its /64.
func TestRemoteSource(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"192.0.2.7:51234":            "192.0.2.7",
		"[::ffff:192.0.2.7]:1":       "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:443": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":          "fe80::/64",
		"not an address":             "not an address",
		"@":                          "@",
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = addr
		req.Header.Set("X-Forwarded-For", "203.0.113.1")
		if got := admin.RemoteSource(req); got != want {
			t.Errorf("RemoteSource(%q) = %q, want %q", addr, got, want)
		}
	}
}
