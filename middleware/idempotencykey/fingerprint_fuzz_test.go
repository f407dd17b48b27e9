package idempotencykey

import (
	"bytes"
	"net/http"
	"net/url"
	"testing"
)

// FuzzRequestFingerprint checks the HTTP request fingerprint: it differs
// whenever the method, path, query or body differs, also when bytes move
// from one field to the next. (The message fingerprint is package
// consume's FuzzFingerprint.)
//
//	go test -run '^$' -fuzz '^FuzzRequestFingerprint$' ./middleware/idempotencykey/
func FuzzRequestFingerprint(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte(`{"a":2}`), "POST", "/things/1", "x=1")
	f.Add([]byte{}, []byte(nil), "", "", "")
	f.Add([]byte("q"), []byte("bq"), "POST", "/a", "b")
	f.Add([]byte{0xff}, []byte{0xfe}, "PATCH", "/a b/%2F", "a=%zz&b")
	f.Fuzz(func(t *testing.T, payload, other []byte, method, path, query string) {
		type request struct {
			method, path, query string
			body                []byte
		}
		reqs := []request{
			{method, path, query, payload},
			{method, path, query, other},
			{method, path + query, "", payload},
			{method, path, query + string(payload), nil},
			{method + path, "", query, payload},
			{method, path, string(payload), []byte(query)},
		}
		fps := make([][]byte, len(reqs))
		for i, rq := range reqs {
			req := &http.Request{Method: rq.method, URL: &url.URL{Path: rq.path, RawQuery: rq.query}}
			fps[i] = requestFingerprint(req, rq.body)
			if again := requestFingerprint(req, bytes.Clone(rq.body)); !bytes.Equal(fps[i], again) {
				t.Fatalf("request %+v: fingerprint %x, then %x", rq, fps[i], again)
			}
		}
		for i := range reqs {
			for j := range i {
				a, b := reqs[i], reqs[j]
				same := a.method == b.method && a.path == b.path && a.query == b.query && bytes.Equal(a.body, b.body)
				if bytes.Equal(fps[i], fps[j]) != same {
					t.Fatalf("requests %+v and %+v: fingerprint equality is not request equality", a, b)
				}
			}
		}
	})
}
