package idempotencykey

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"

	"github.com/onceflow/onceflow/problem"
)

// FuzzIdempotencyKey parses arbitrary Idempotency-Key values. A value is
// either a key of 1 to 255 printable ASCII characters, which its sf-string
// form names too, or a 400 (problem.Invalid); a bare value is the key as it
// is.
//
//	go test -run '^$' -fuzz '^FuzzIdempotencyKey$' ./middleware/idempotencykey/
func FuzzIdempotencyKey(f *testing.F) {
	for _, v := range []string{"abc-123", `"abc-123"`, `"unterminated`, `""`, `"a";b=1`, `("a" "b")`,
		"8e03978e-40d5-43e8-bc93-6894a57f9324", `"with \"escapes\" \\"`, "k\x7f", `"a", "b"`} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := idempotencyKey(http.Header{Header: {v}})
		switch {
		case err != nil:
			if problem.KindOf(err) != problem.Invalid || key != "" {
				t.Fatalf("%q: key %q, error %v; want a 400 and no key", v, key, err)
			}
			return
		case v == "":
			if key != "" {
				t.Fatalf("empty value gave key %q", key)
			}
			return
		}
		if key == "" || len(key) > MaxKeyLength ||
			strings.ContainsFunc(key, func(c rune) bool { return c < ' ' || c > '~' }) {
			t.Fatalf("%q: accepted key %q is not 1 to 255 printable ASCII characters", v, key)
		}
		if v[0] != '"' && key != v {
			t.Fatalf("bare %q gave key %q, want it as it is", v, key)
		}
		quoted, err := httpsfv.Marshal(httpsfv.NewItem(key))
		if err != nil {
			t.Fatalf("key %q has no sf-string form: %v", key, err)
		}
		if again, err := idempotencyKey(http.Header{Header: {quoted}}); again != key || err != nil {
			t.Fatalf("%q names key %q, but its sf-string form %s names %q (%v)", v, key, quoted, again, err)
		}
	})
}
