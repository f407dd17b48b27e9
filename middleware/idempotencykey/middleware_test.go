package idempotencykey

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

// step is one request and what its answer must be.
type step struct {
	req      request
	status   int
	run      int32 // the handler run whose response this is; 0: none ran
	replayed bool  // Idempotent-Replayed: true, with the body of run
}

var clientKeys = map[string]string{"key-a": "client-a", "key-b": "client-b"}

func TestHTTPStatuses(t *testing.T) {
	status := func(code int) func(w http.ResponseWriter, r *http.Request, run int32) {
		return func(w http.ResponseWriter, r *http.Request, run int32) {
			w.Header().Set("X-Run", string(rune('0'+run)))
			w.WriteHeader(code)
			_, _ = w.Write([]byte("run " + string(rune('0'+run))))
		}
	}
	large := func(w http.ResponseWriter, r *http.Request, run int32) {
		w.Header().Set("X-Run", string(rune('0'+run)))
		_, _ = w.Write(bytes.Repeat([]byte("x"), 40))
		_, _ = w.Write(bytes.Repeat([]byte("y"), 40))
	}
	down := stores.Unavailable("claim", errDriver)
	full := fmt.Errorf("claiming key: %w: 100 records", stores.ErrFull)
	a, b := "Authorization", "Bearer "
	cases := []struct {
		name    string
		cfg     receiver.Config
		keys    map[string]string
		handler func(w http.ResponseWriter, r *http.Request, run int32)
		opts    []Option
		fault   error // injected on claim
		steps   []step
	}{
		{name: "first runs, retry replays", steps: []step{
			{req: post("/things/1", "k", "A"), status: 201, run: 1},
			{req: post("/things/1", "k", "A"), status: 201, run: 1, replayed: true},
			{req: post("/things/1", "k2", "A"), status: 201, run: 2},
		}},
		{name: "missing key", steps: []step{{req: post("/things/1", "-", "A"), status: 400}}},
		{name: "optional key", opts: []Option{WithOptionalKey()}, steps: []step{
			{req: post("/things/1", "-", "A"), status: 201, run: 1},
			{req: post("/things/1", "-", "A"), status: 201, run: 2},
			{req: post("/things/1", "k", "A"), status: 201, run: 3},
			{req: post("/things/1", "k", "A"), status: 201, run: 3, replayed: true},
			{req: post("/things/1", "k\n", "A"), status: 400},
		}},
		{name: "empty key", steps: []step{{req: post("/things/1", "", "A"), status: 400}}},
		{name: "two keys", steps: []step{{req: post("/things/1", "k", "A", Header, "j"), status: 400}}},
		{name: "key of 256 characters", steps: []step{{req: post("/things/1", strings.Repeat("k", 256), "A"), status: 400}}},
		{name: "key of 255 characters", steps: []step{{req: post("/things/1", strings.Repeat("k", 255), "A"), status: 201, run: 1}}},
		{name: "key with a control character", steps: []step{{req: post("/things/1", "k\x01", "A"), status: 400}}},
		{name: "key with DEL", steps: []step{{req: post("/things/1", "k\x7f", "A"), status: 400}}},
		{name: "key not ASCII", steps: []step{{req: post("/things/1", "ключ", "A"), status: 400}}},
		{name: "body over the limit", opts: []Option{WithMaxRequestBody(4)}, steps: []step{
			{req: post("/things/1", "k", "12345"), status: 413},
			{req: post("/things/1", "k", "1234"), status: 201, run: 1},
		}},
		{name: "other body", steps: []step{
			{req: post("/things/1", "k", "A"), status: 201, run: 1},
			{req: post("/things/1", "k", "B"), status: 422},
		}},
		{name: "other path on the route", steps: []step{
			{req: post("/things/1", "k", "A"), status: 201, run: 1},
			{req: post("/things/2", "k", "A"), status: 422},
			{req: post("/things/1?dry=1", "k", "A"), status: 422},
		}},
		{name: "other route is another key", steps: []step{
			{req: post("/things/1", "k", "A"), status: 201, run: 1},
			{req: post("/other", "k", "A"), status: 201, run: 2},
		}},
		{name: "4xx is stored", handler: status(404), steps: []step{
			{req: post("/things/1", "k", "A"), status: 404, run: 1},
			{req: post("/things/1", "k", "A"), status: 404, run: 1, replayed: true},
		}},
		{name: "204 is stored", handler: status(204), steps: []step{
			{req: post("/things/1", "k", "A"), status: 204, run: 1},
			{req: post("/things/1", "k", "A"), status: 204, run: 1, replayed: true},
		}},
		{name: "500 releases", handler: status(500), steps: []step{
			{req: post("/things/1", "k", "A"), status: 500, run: 1},
			{req: post("/things/1", "k", "A"), status: 500, run: 2},
		}},
		{name: "503 releases", handler: status(503), steps: []step{
			{req: post("/things/1", "k", "A"), status: 503, run: 1},
			{req: post("/things/1", "k", "A"), status: 503, run: 2},
		}},
		{name: "429 releases", handler: status(429), steps: []step{
			{req: post("/things/1", "k", "A"), status: 429, run: 1},
			{req: post("/things/1", "k", "A"), status: 429, run: 2},
		}},
		{name: "oversize response is served, not stored", handler: large, opts: []Option{WithMaxStoredResponse(50)},
			steps: []step{
				{req: post("/things/1", "k", "A"), status: 200, run: 1},
				{req: post("/things/1", "k", "A"), status: 200, run: 2},
			}},
		{name: "response at the limit is stored", handler: large, opts: []Option{WithMaxStoredResponse(80)},
			steps: []step{
				{req: post("/things/1", "k", "A"), status: 200, run: 1},
				{req: post("/things/1", "k", "A"), status: 200, run: 1, replayed: true},
			}},
		{name: "store down fails closed", fault: down, steps: []step{{req: post("/things/1", "k", "A"), status: 503}}},
		{name: "store down fails open", fault: down, cfg: receiver.Config{OnStoreError: receiver.FailOpen}, steps: []step{
			{req: post("/things/1", "k", "A"), status: 201, run: 1},
			{req: post("/things/1", "k", "A"), status: 201, run: 2},
		}},
		{name: "store full", fault: full, steps: []step{{req: post("/things/1", "k", "A"), status: 503}}},
		{name: "store full never fails open", fault: full, cfg: receiver.Config{OnStoreError: receiver.FailOpen}, steps: []step{
			{req: post("/things/1", "k", "A"), status: 503},
		}},
		{name: "client quota", opts: []Option{WithClientQuota(2, time.Hour)}, steps: []step{
			{req: post("/things/1", "k1", "A"), status: 201, run: 1},
			{req: post("/things/1", "k1", "A"), status: 201, run: 1, replayed: true}, // creates no record
			{req: post("/things/1", "k1", "B"), status: 422},
			{req: post("/things/1", "k2", "A"), status: 201, run: 2},
			{req: post("/things/1", "k3", "A"), status: 429},
			{req: post("/things/1", "k1", "A"), status: 429}, // nothing left: refused before the store
		}},
		{name: "client quota per client", keys: clientKeys, opts: []Option{WithClientQuota(1, time.Hour)}, steps: []step{
			{req: post("/things/1", "k1", "A", a, b+"key-a"), status: 201, run: 1},
			{req: post("/things/1", "k2", "A", a, b+"key-a"), status: 429},
			{req: post("/things/1", "k2", "A", a, b+"key-b"), status: 201, run: 2},
		}},
		{name: "client quota off", opts: []Option{WithClientQuota(0, 0)}, steps: []step{
			{req: post("/things/1", "k1", "A"), status: 201, run: 1},
			{req: post("/things/1", "k2", "A"), status: 201, run: 2},
		}},
		{name: "no api key", keys: clientKeys, steps: []step{{req: post("/things/1", "k", "A"), status: 401}}},
		{name: "unknown api key", keys: clientKeys, steps: []step{{req: post("/things/1", "k", "A", a, b+"key-c"), status: 401}}},
		{name: "basic auth", keys: clientKeys, steps: []step{{req: post("/things/1", "k", "A", a, "Basic a2V5LWE6"), status: 401}}},
		{name: "clients are isolated", keys: clientKeys, steps: []step{
			{req: post("/things/1", "k", "A", a, b+"key-a"), status: 201, run: 1},
			{req: post("/things/1", "k", "A", a, b+"key-b"), status: 201, run: 2},
			{req: post("/things/1", "k", "B", a, b+"key-b"), status: 422},
			{req: post("/things/1", "k", "A", a, "bearer key-a"), status: 201, run: 1, replayed: true},
			{req: post("/things/1", "k", "A", a, b+"key-b"), status: 201, run: 2, replayed: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHTTPFixture(t, tc.cfg, tc.keys, tc.handler, tc.opts...)
			if tc.fault != nil {
				f.store.Fail("claim", tc.fault)
			}
			bodies := map[int32][]byte{} // the first body of each run
			for i, s := range tc.steps {
				w := f.do(s.req)
				res := w.Result()
				if res.StatusCode != s.status {
					t.Fatalf("step %d: status %d, want %d; body %s", i, res.StatusCode, s.status, w.Body)
				}
				if got := res.Header.Get(ReplayedHeader) == "true"; got != s.replayed {
					t.Errorf("step %d: replayed = %v, want %v", i, got, s.replayed)
				}
				if s.run == 0 {
					if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
						t.Errorf("step %d: Content-Type %q, want a problem", i, ct)
					}
					continue
				}
				if got := res.Header.Get("X-Run"); got != string(rune('0'+s.run)) {
					t.Errorf("step %d: response of run %s, want run %d", i, got, s.run)
				}
				if first, ok := bodies[s.run]; ok && !bytes.Equal(first, w.Body.Bytes()) {
					t.Errorf("step %d: body %q, want the stored %q", i, w.Body, first)
				}
				bodies[s.run] = w.Body.Bytes()
				if s.replayed && res.Header.Get("Set-Cookie") != "" {
					t.Errorf("step %d: replayed Set-Cookie", i)
				}
			}
			if got, want := f.runs.Load(), int32(len(bodies)); got != want {
				t.Errorf("handler ran %d times, want %d", got, want)
			}
		})
	}
}

// Problems have their extra headers: Retry-After on 503, WWW-Authenticate
// on 401.
func TestHTTPProblemHeaders(t *testing.T) {
	f := newHTTPFixture(t, receiver.Config{}, clientKeys, nil)
	w := f.do(post("/things/1", "k", "A"))
	if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("401 WWW-Authenticate = %q, want Bearer", got)
	}
	f.store.Fail("claim", stores.Unavailable("claim", errDriver))
	w = f.do(post("/things/1", "k", "A", "Authorization", "Bearer key-a"))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("store down: %d Retry-After %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	f.store.Fail("claim", fmt.Errorf("%w: 100 records", stores.ErrFull))
	w = f.do(post("/things/1", "k", "A", "Authorization", "Bearer key-a"))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("store full: %d Retry-After %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
}

// A replay has the status, headers and body of the first response, byte
// for byte, whatever the body holds; Set-Cookie is not replayed.
func TestHTTPReplayIsByteIdentical(t *testing.T) {
	body := make([]byte, 64<<10)
	_, _ = rand.Read(body)
	f := newHTTPFixture(t, receiver.Config{}, nil, func(w http.ResponseWriter, r *http.Request, run int32) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Location", "/things/1")
		w.Header().Set("Set-Cookie", "session=secret")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "1")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(body[:1000])
		_, _ = w.Write(body[1000:])
	})
	first := f.do(post("/things/1", "k", "A"))
	replay := f.do(post("/things/1", "k", "A"))
	if first.Code != http.StatusAccepted || replay.Code != http.StatusAccepted {
		t.Fatalf("statuses %d, %d; want 202 twice", first.Code, replay.Code)
	}
	if !bytes.Equal(first.Body.Bytes(), body) || !bytes.Equal(replay.Body.Bytes(), body) {
		t.Fatal("a body differs from what the handler wrote")
	}
	for _, name := range []string{"Content-Type", "Location", "Content-Length"} {
		if got, want := replay.Header().Get(name), first.Header().Get(name); got != want || got == "" {
			t.Errorf("replayed %s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"Set-Cookie", "X-Hop", "Connection"} {
		if got := replay.Header().Get(name); got != "" {
			t.Errorf("replayed %s = %q, want none", name, got)
		}
	}
	if f.rec.Count(receiver.OutcomeProcessed) != 1 || f.rec.Count(receiver.OutcomeDuplicate) != 1 {
		t.Errorf("outcomes %v, want one processed and one duplicate", f.rec.Outcomes())
	}
}

// TestReadAtMostReadsAsReadAllDoes holds the sized read of a request body to
// io.ReadAll's answer, whether the body matches its declared length or not.
func TestReadAtMostReadsAsReadAllDoes(t *testing.T) {
	failing := errors.New("connection reset")
	for _, tc := range []struct {
		name     string
		body     func() io.Reader
		declared int64
		want     string
		err      error
	}{
		{name: "declared length", body: text("abc"), declared: 3, want: "abc"},
		{name: "unknown length", body: text("abc"), declared: -1, want: "abc"},
		{name: "empty", body: text(""), declared: 0, want: ""},
		{name: "shorter than declared", body: text("abc"), declared: 5, want: "abc"},
		{name: "longer than declared", body: text("abc"), declared: 1, want: "abc"},
		{name: "longer than the limit", body: text("abcdefgh"), declared: 2, want: "abcde"},
		{name: "one byte at a time", body: func() io.Reader { return iotest.OneByteReader(strings.NewReader("abcd")) }, declared: 4, want: "abcd"},
		{name: "failing", body: func() io.Reader { return io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(failing)) },
			declared: 4, want: "ab", err: failing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 4
			got, err := readAtMost(tc.body(), tc.declared, limit)
			ref, refErr := io.ReadAll(io.LimitReader(tc.body(), limit+1))
			if string(got) != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("read %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			if string(got) != string(ref) || !errors.Is(err, refErr) {
				t.Errorf("read %q, %v; io.ReadAll read %q, %v", got, err, ref, refErr)
			}
		})
	}
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }
