package idempotencykey

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
)

// MaxKeyLength is the longest idempotency key accepted, in characters (all
// printable ASCII, so also in bytes).
const MaxKeyLength = 255

// acceptedKey says, in every 400 about a malformed Idempotency-Key, what is
// accepted.
var acceptedKey = fmt.Sprintf(`send an sf-string ("abc-123") or a bare key (abc-123) of 1 to %d printable ASCII characters`,
	MaxKeyLength)

// Errors of a bad Idempotency-Key header, answered with 400.
var (
	errMissingKey = problem.New(problem.Invalid, "this request requires an "+Header+" header")
	errManyKeys   = problem.New(problem.Invalid, "send one "+Header+" header, not several")
)

// malformedKey is the 400 of an Idempotency-Key value that is not a key:
// why, then what is accepted.
func malformedKey(why string) error {
	return problem.New(problem.Invalid, "the "+Header+" header "+why+": "+acceptedKey)
}

// idempotencyKey returns the request's idempotency key, "" when there is
// none (no header, or one empty value), or a [*problem.Error] of kind
// [problem.Invalid] saying why the header is not a key. What it accepts is
// documented on [Header].
func idempotencyKey(h http.Header) (string, error) {
	values := h.Values(Header)
	switch {
	case len(values) == 0 || len(values) == 1 && values[0] == "":
		return "", nil
	case len(values) > 1:
		return "", errManyKeys
	}
	key := values[0]
	switch key[0] {
	case '(':
		return "", malformedKey("is an inner list, not one key")
	case '"':
		item, err := httpsfv.UnmarshalItem(values)
		if err != nil {
			return "", malformedKey("begins with a quote but is not an sf-string (" + err.Error() + ")")
		}
		s, ok := item.Value.(string)
		switch {
		case !ok: // unreachable: a value that begins with '"' is a string
			return "", malformedKey("is not an sf-string")
		case len(item.Params.Names()) > 0:
			return "", malformedKey("is an sf-string with parameters")
		case s == "":
			return "", malformedKey("is an empty sf-string")
		}
		key = s
	}
	switch {
	case strings.ContainsFunc(key, func(c rune) bool { return c < ' ' || c > '~' }):
		return "", malformedKey("holds a character that is not printable ASCII")
	case len(key) > MaxKeyLength:
		return "", malformedKey(fmt.Sprintf("is longer than %d characters", MaxKeyLength))
	}
	return key, nil
}

// Parse returns the key that an Idempotency-Key header value names, by the
// rules of [Header]: the same key for an sf-string and its bare form. An
// empty value, or one that is not a key, gives a [*problem.Error] of kind
// [problem.Invalid] saying why.
func Parse(value string) (string, error) {
	key, err := idempotencyKey(http.Header{Header: {value}})
	if err == nil && key == "" {
		err = errMissingKey
	}
	return key, err
}

// RequestKey is the key, within [Scope], under which [Middleware] keeps
// the response to client's request with idempotency key key to the
// route pattern (such as "POST /v1/charges") by method: the four, each
// quoted, so that no two different tuples give the same key and no
// client's key can name another client's record. Its record is
// [receiver.RecordKey](Scope, RequestKey(...)).
func RequestKey(client, method, pattern, key string) string {
	b := make([]byte, 0, len(client)+len(method)+len(pattern)+len(key)+len(`"" "" "" ""`))
	b = strconv.AppendQuote(b, client)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, method)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, pattern)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, key)
	return string(b)
}

// ClientOf returns the client whose request a record key names, and
// whether it is one of the face's, [receiver.RecordKey](Scope,
// RequestKey(client, …)). A store that keeps each client's share of its
// capacity (stores/memory's Config.Owner) reads the client with it.
func ClientOf(recordKey string) (client string, ok bool) {
	rest, ok := strings.CutPrefix(recordKey, receiver.RecordKey(Scope, ""))
	if !ok {
		return "", false
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	client, err = strconv.Unquote(quoted)
	return client, err == nil
}

// requestKey is RequestKey of a request.
func requestKey(client string, r *http.Request, key string) string {
	return RequestKey(client, r.Method, r.Pattern, key)
}

// requestFingerprint is the SHA-256 of the method, the escaped path, the
// raw query and the body, each prefixed by its length so that fields cannot
// run together: the same key sent with another of these is a misuse.
func requestFingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	for _, field := range [][]byte{[]byte(r.Method), []byte(r.URL.EscapedPath()), []byte(r.URL.RawQuery), body} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(field)))
		h.Write(n[:])
		h.Write(field)
	}
	return h.Sum(nil)
}
