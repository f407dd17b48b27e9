package idempotencykey

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/problem"
)

func TestIdempotencyKeyHeader(t *testing.T) {
	for _, tc := range []struct {
		values []string
		key    string
		why    string // in the 400's detail; "" when the header is accepted
	}{
		{values: nil},
		{values: []string{""}},
		{values: []string{"a"}, key: "a"},
		{values: []string{`"a"`}, key: "a"},
		{values: []string{"abc-123"}, key: "abc-123"},
		{values: []string{`"abc-123"`}, key: "abc-123"},
		{values: []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, key: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{values: []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, key: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{values: []string{`"with \"escapes\" \\"`}, key: `with "escapes" \`},
		{values: []string{`"with space ~"`}, key: "with space ~"},
		{values: []string{"with space ~"}, key: "with space ~"},
		{values: []string{`ab"c`}, key: `ab"c`},
		{values: []string{"*token;a=1"}, key: "*token;a=1"},
		{values: []string{strings.Repeat("k", 255)}, key: strings.Repeat("k", 255)},
		{values: []string{`"` + strings.Repeat("k", 255) + `"`}, key: strings.Repeat("k", 255)},
		{values: []string{strings.Repeat("k", 256)}, why: "is longer than 255 characters"},
		{values: []string{`"` + strings.Repeat("k", 256) + `"`}, why: "is longer than 255 characters"},
		{values: []string{"a", "b"}, why: "not several"},
		{values: []string{`"a"`, "a"}, why: "not several"},
		{values: []string{"a\tb"}, why: "not printable ASCII"},
		{values: []string{"a\x00"}, why: "not printable ASCII"},
		{values: []string{"k\x01"}, why: "not printable ASCII"},
		{values: []string{"é"}, why: "not printable ASCII"},
		{values: []string{"k\x7f"}, why: "not printable ASCII"},
		{values: []string{`"unterminated`}, why: "begins with a quote but is not an sf-string"},
		{values: []string{`"`}, why: "begins with a quote but is not an sf-string"},
		{values: []string{`"a" "b"`}, why: "begins with a quote but is not an sf-string"},
		{values: []string{`"a", "b"`}, why: "begins with a quote but is not an sf-string"},
		{values: []string{`"é"`}, why: "begins with a quote but is not an sf-string"},
		{values: []string{`"bad \escape"`}, why: "begins with a quote but is not an sf-string"},
		{values: []string{`""`}, why: "is an empty sf-string"},
		{values: []string{`"abc";a=1`}, why: "is an sf-string with parameters"},
		{values: []string{`"abc";a`}, why: "is an sf-string with parameters"},
		{values: []string{`("a" "b")`}, why: "is an inner list"},
		{values: []string{`("a")`}, why: "is an inner list"},
	} {
		key, err := idempotencyKey(http.Header{Header: tc.values})
		detail := ""
		if err != nil {
			detail = err.Error()
			if problem.KindOf(err) != problem.Invalid {
				t.Errorf("%q: %v is not of kind Invalid", tc.values, err)
			}
		}
		if key != tc.key || (tc.why == "") != (err == nil) || !strings.Contains(detail, tc.why) {
			t.Errorf("%q: key %q, error %q; want key %q, an error saying %q", tc.values, key, detail, tc.key, tc.why)
		}
	}
}

// Every 400 about a malformed key says what is accepted.
func TestMalformedKeySaysWhatIsAccepted(t *testing.T) {
	_, err := idempotencyKey(http.Header{Header: {`"unterminated`}})
	want := `the Idempotency-Key header begins with a quote but is not an sf-string (invalid string format: character 13): ` +
		`send an sf-string ("abc-123") or a bare key (abc-123) of 1 to 255 printable ASCII characters`
	if err == nil || err.Error() != want {
		t.Errorf("detail %q, want %q", err, want)
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
