package idempotencykey

import (
	"bytes"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/onceflow/onceflow/middleware/receiver"
)

func TestResponseEnvelopeRoundTrip(t *testing.T) {
	body := []byte{0, 1, 2, 0xff, '\n'}
	h := http.Header{
		"Content-Type": {"application/json"}, "Location": {"/x"}, "X-Many": {"1", "2"},
		"Set-Cookie": {"s=1"}, "Date": {"now"}, "Content-Length": {"5"}, "Transfer-Encoding": {"chunked"},
		"Connection": {"close, X-Hop"}, "X-Hop": {"1"}, "Keep-Alive": {"timeout=5"},
		http.TrailerPrefix + "X-T": {"t"}, ReplayedHeader: {"true"},
	}
	allow := newReplayed([]string{"X-Many", "X-Hop"})
	got, err := decodeResponse(allow, encodeResponse(allow, http.StatusCreated, h, body))
	if err != nil {
		t.Fatal(err)
	}
	if got.status != http.StatusCreated || !bytes.Equal(got.body, body) {
		t.Errorf("decoded %d %q, want 201 %q", got.status, got.body, body)
	}
	want := http.Header{"Content-Type": {"application/json"}, "Location": {"/x"}, "X-Many": {"1", "2"}}
	if len(got.header) != len(want) {
		t.Errorf("stored headers %v, want %v", got.header, want)
	}
	for name, values := range want {
		if g := got.header.Values(name); len(g) != len(values) || g[0] != values[0] {
			t.Errorf("stored %s = %v, want %v", name, g, values)
		}
	}
}

func TestResponseEnvelopeVersions(t *testing.T) {
	v1 := `{"v":1,"status":202,"header":{"Location":["/p/1"]},"body":"b2s=","future":true}`
	got, err := decodeResponse(newReplayed(nil), []byte(v1))
	if err != nil || got.status != 202 || string(got.body) != "ok" || got.header.Get("Location") != "/p/1" {
		t.Errorf("version 1 decoded as %+v, %v", got, err)
	}
	for _, bad := range []string{`{"v":2,"status":200}`, `{"v":1,"status":0}`, `not json`, ``} {
		if _, err := decodeResponse(newReplayed(nil), []byte(bad)); !errors.Is(err, receiver.ErrUnreadableResult) {
			t.Errorf("decode %q: %v, want ErrUnreadableResult", bad, err)
		}
	}
}

// A stored envelope is filtered again when it is replayed: whoever wrote
// it (an older version, a bug, anyone who can write the store), a replay
// never sends a Set-Cookie, a hop-by-hop header, a header its Connection
// names, framing headers or its own Idempotent-Replayed.
func TestReplayFiltersStoredHeaders(t *testing.T) {
	forged := `{"v":1,"status":201,"header":{` +
		`"Content-Type":["application/json"],"Location":["/things/1"],` +
		`"Set-Cookie":["session=victim"],"set-cookie":["session=victim2"],"Connection":["close, X-Hop"],"X-Hop":["1"],` +
		`"Keep-Alive":["timeout=5"],"Transfer-Encoding":["chunked"],"Content-Length":["9999"],"Upgrade":["h2c"],` +
		`"Proxy-Authenticate":["Basic"],"Trailer:X-T":["t"],"Idempotent-Replayed":["false"]},"body":"b2s="}`
	f := newHTTPFixture(t, receiver.Config{}, nil, nil)
	f.store.CompleteWith([]byte(forged))
	if first := f.do(post("/things/1", "k", "A")); first.Code != http.StatusCreated {
		t.Fatalf("first: status %d", first.Code)
	}
	replay := f.do(post("/things/1", "k", "A"))
	if replay.Code != http.StatusCreated || replay.Body.String() != "ok" || replay.Header().Get(ReplayedHeader) != "true" {
		t.Fatalf("replay: %d %q %s=%q, want 201 \"ok\" replayed", replay.Code, replay.Body, ReplayedHeader, replay.Header().Get(ReplayedHeader))
	}
	want := http.Header{
		"Content-Type": {"application/json"}, "Location": {"/things/1"},
		"Content-Length": {"2"}, ReplayedHeader: {"true"},
	}
	if !reflect.DeepEqual(replay.Header(), want) {
		t.Errorf("replayed headers %v, want %v", replay.Header(), want)
	}
}

// Only the allow-list is replayed: a handler's Authorization, session or
// trace headers reach the first answer and no replay, unless it declares
// them (WithReplayedHeaders); one that no replay may send cannot be
// declared.
func TestReplaySendsOnlyAllowedHeaders(t *testing.T) {
	h := http.Header{
		"Content-Type": {"application/json"}, "Location": {"/x"}, "Authorization": {"Bearer handler-token"},
		"X-Correlation-Id": {"c-1"}, "X-Trace": {"t"},
	}
	for _, tc := range []struct {
		declared []string
		want     []string
	}{
		{nil, []string{"Content-Type", "Location"}},
		{[]string{"x-correlation-id"}, []string{"Content-Type", "Location", "X-Correlation-Id"}},
	} {
		allow := newReplayed(tc.declared)
		got, err := decodeResponse(allow, encodeResponse(allow, http.StatusCreated, h, nil))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for name := range got.header {
			names = append(names, name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("declared %v: replayed %v, want %v", tc.declared, names, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("declaring Authorization did not panic")
		}
	}()
	newReplayed([]string{"authorization"})
}
