package middleware

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// MaxIdempotencyKeyLength is the longest Idempotency-Key value accepted, in
// characters (all printable ASCII, so also in bytes).
const MaxIdempotencyKeyLength = 255

// Details of the 400 problems that a bad Idempotency-Key header gets.
var (
	detailMissingKey   = "this request requires an " + IdempotencyKeyHeader + " header"
	detailManyKeys     = "send one " + IdempotencyKeyHeader + " header, not several"
	detailMalformedKey = fmt.Sprintf("the %s header must be 1 to %d printable ASCII characters",
		IdempotencyKeyHeader, MaxIdempotencyKeyLength)
)

// idempotencyKey returns the request's Idempotency-Key, "" when there is
// none, or a detail for the client when the header is malformed. The value
// is opaque: a quoted structured-field string is kept quotes and all, so a
// client must send its key the same way on every retry (it will).
func idempotencyKey(h http.Header) (key, problem string) {
	values := h.Values(IdempotencyKeyHeader)
	switch {
	case len(values) == 0 || len(values) == 1 && values[0] == "":
		return "", ""
	case len(values) > 1:
		return "", detailManyKeys
	}
	key = values[0]
	if len(key) > MaxIdempotencyKeyLength || strings.ContainsFunc(key, func(c rune) bool { return c < ' ' || c > '~' }) {
		return "", detailMalformedKey
	}
	return key, ""
}

// requestKey is the record key of a request within the "http" scope: the
// client identity, the method, the route pattern and the Idempotency-Key,
// each quoted, so that no two different tuples give the same key and no
// client's key can name another client's record.
func requestKey(client string, r *http.Request, key string) string {
	return strconv.Quote(client) + " " + strconv.Quote(r.Method) + " " +
		strconv.Quote(r.Pattern) + " " + strconv.Quote(key)
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
