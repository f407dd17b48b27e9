package middleware

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIdempotencyKeyHeader(t *testing.T) {
	for _, tc := range []struct {
		values  []string
		key     string
		problem bool
	}{
		{values: nil},
		{values: []string{""}},
		{values: []string{"a"}, key: "a"},
		{values: []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, key: `"8e03978e-40d5-43e8-bc93-6894a57f9324"`},
		{values: []string{"with space ~"}, key: "with space ~"},
		{values: []string{strings.Repeat("k", 255)}, key: strings.Repeat("k", 255)},
		{values: []string{strings.Repeat("k", 256)}, problem: true},
		{values: []string{"a", "b"}, problem: true},
		{values: []string{"a\tb"}, problem: true},
		{values: []string{"é"}, problem: true},
	} {
		key, problem := idempotencyKey(http.Header{IdempotencyKeyHeader: tc.values})
		if key != tc.key || (problem != "") != tc.problem {
			t.Errorf("%q: key %q problem %q; want key %q, problem %v", tc.values, key, problem, tc.key, tc.problem)
		}
	}
}

// No two different (client, method, pattern, key) tuples share a record.
func TestRequestKeyIsUnambiguous(t *testing.T) {
	req := func(method, pattern string) *http.Request {
		r := httptest.NewRequest(method, "/", nil)
		r.Pattern = pattern
		return r
	}
	keys := map[string]bool{}
	for _, k := range []string{
		requestKey("a", req("POST", "/x"), "k"),
		requestKey("a ", req("POST", "/x"), "k"),
		requestKey("a", req("POST", "/x "), "k"),
		requestKey(`a" "POST`, req("", "/x"), "k"),
		requestKey("", req("POST", "/x"), "k"),
		requestKey("b", req("POST", "/x"), "k"),
		requestKey("a", req("PUT", "/x"), "k"),
	} {
		if keys[k] {
			t.Errorf("key %s made twice", k)
		}
		keys[k] = true
	}
}

// Fields cannot run into each other: moving a byte from the path to the
// query or the body changes the fingerprint.
func TestRequestFingerprintSeparatesFields(t *testing.T) {
	fp := func(target, body string) []byte {
		return requestFingerprint(httptest.NewRequest(http.MethodPost, target, nil), []byte(body))
	}
	seen := map[string]string{}
	for _, tc := range [][2]string{{"/ab", ""}, {"/a", "b"}, {"/a?b", ""}, {"/a?c", "b"}, {"/a?cb", ""}, {"/a%2Fb", ""}, {"/a/b", ""}} {
		got := string(fp(tc[0], tc[1]))
		if prev, ok := seen[got]; ok {
			t.Errorf("%v and %s have one fingerprint", tc, prev)
		}
		seen[got] = tc[0] + " " + tc[1]
	}
	if !bytes.Equal(fp("/a?x=1", "b"), fp("/a?x=1", "b")) {
		t.Error("fingerprint is not deterministic")
	}
}
