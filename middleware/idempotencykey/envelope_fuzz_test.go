package idempotencykey

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// FuzzResponseEnvelope checks the stored HTTP response envelope both ways.
// Reading arbitrary stored bytes either fails with ErrUnreadableResult or
// gives a status of 200 to 999 that replays byte for byte, and whose
// storable headers re-encode to an envelope decoding to the same response.
// Encoding any status of 200 to 999, header and body decodes to it: the
// body byte for byte, the header when it is storable and valid UTF-8; and
// it writes exactly what json.Marshal writes for the envelope.
//
//	go test -run '^$' -fuzz '^FuzzResponseEnvelope$' ./middleware/idempotencykey/
func FuzzResponseEnvelope(f *testing.F) {
	f.Add([]byte(`{"v":1,"status":202,"header":{"Location":["/p/1"]},"body":"b2s="}`),
		uint16(201), "Content-Type", "application/json", []byte(`{"ok":true}`))
	f.Add([]byte(`{"v":1,"status":200,"header":{"X-B":["<&>","\u00e9\n",""],"X-A":null,"X-C":[],"Date":["d"]}}`),
		uint16(0), "X-\xff", "a\"b\\c\u2028", []byte{})
	f.Fuzz(func(t *testing.T, stored []byte, status uint16, name, value string, body []byte) {
		// The allow-list holds the fuzzed name, as sent and as JSON
		// decodes it, unless no replay may send it.
		allow := newReplayed(nil)
		for _, n := range []string{name, receivertest.AsJSONString(name)} {
			if n := http.CanonicalHeaderKey(n); !neverReplayed[n] {
				allow[n] = true
			}
		}
		resp, err := decodeResponse(allow, stored)
		if err != nil {
			if !errors.Is(err, receiver.ErrUnreadableResult) || !consume.Permanent(err) {
				t.Fatalf("decoding %q: %v, want a permanent ErrUnreadableResult", stored, err)
			}
		} else {
			if resp.status < 200 || resp.status > 999 {
				t.Fatalf("decoding %q: status %d", stored, resp.status)
			}
			checkReplay(t, resp)
			again := roundTripResponse(t, allow, resp.status, resp.header, resp.body)
			if again.status != resp.status || !bytes.Equal(again.body, resp.body) ||
				!sameHeader(again.header, storableHeader(allow, resp.header)) {
				t.Fatalf("decoding %q: %+v, re-encoded and decoded %+v", stored, resp, again)
			}
		}

		code := 200 + int(status)%800
		header := http.Header{name: {value}}
		out := roundTripResponse(t, allow, code, header, body)
		want := http.Header{}
		if len(storableHeader(allow, header)) == 1 {
			want[receivertest.AsJSONString(name)] = []string{receivertest.AsJSONString(value)}
		}
		if out.status != code || !bytes.Equal(out.body, body) || !sameHeader(out.header, want) {
			t.Fatalf("response %d %v %q decoded as %d %v %q", code, header, body, out.status, out.header, out.body)
		}
		checkReplay(t, out)
	})
}

// roundTripResponse encodes a response, checks that the envelope is what
// json.Marshal writes, and decodes it.
func roundTripResponse(t *testing.T, allow replayed, status int, header http.Header, body []byte) storedResponse {
	t.Helper()
	b := encodeResponse(allow, status, header, body)
	want, err := json.Marshal(responseEnvelope{V: responseEnvelopeVersion, Status: status, Header: storableHeader(allow, header), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoding %d %v %q:\n got %s\nwant %s", status, header, body, b, want)
	}
	out, err := decodeResponse(allow, b)
	if err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return out
}

// checkReplay writes resp as a replay does and checks what the client gets.
func checkReplay(t *testing.T, resp storedResponse) {
	t.Helper()
	w := httptest.NewRecorder()
	writeResponse(w, resp.status, resp.header, resp.body)
	want := resp.body
	if !bodyAllowed(resp.status) {
		want = nil
	}
	if w.Code != resp.status || !bytes.Equal(w.Body.Bytes(), want) {
		t.Fatalf("replaying %d %q: sent %d %q", resp.status, resp.body, w.Code, w.Body.Bytes())
	}
}

// storableHeader is the part of h that encodeResponse stores.
func storableHeader(allow replayed, h http.Header) http.Header {
	out := http.Header{}
	for _, name := range allow.storableNames(h, nil) {
		out[name] = h[name]
	}
	return out
}

// sameHeader compares headers, taking nil and empty as equal.
func sameHeader(a, b http.Header) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}
