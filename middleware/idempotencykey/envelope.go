package idempotencykey

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// The HTTP face stores a response as a versioned JSON envelope:
//
//	{"v":1,"status":202,"header":{"Content-Type":["application/json"]},"body":"<base64>"}
//
// As with the Watermill face's envelope of produced messages, version 1 is never changed in
// place: a new layout gets a new "v", and decodeResponse keeps a case for
// every version still within a TTL of being written. Unknown fields are
// ignored. The body round-trips byte for byte; header values are JSON
// strings, so they round-trip when they are valid UTF-8.
const responseEnvelopeVersion = 1

type responseEnvelope struct {
	V      int         `json:"v"`
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// storedResponse is a response read back from the store.
type storedResponse struct {
	status int
	header http.Header
	body   []byte
}

// encodeResponse stores a response in the current envelope version, with
// only the headers of allow (see storableNames). It writes exactly what json.Marshal
// writes for the responseEnvelope of those headers (FuzzResponseEnvelope
// holds it to that), in one allocation and without reflection: it runs on
// every request whose response is stored. A name or value that JSON would
// escape, rare in a header, is left to json.Marshal.
func encodeResponse(allow replayed, status int, header http.Header, body []byte) []byte {
	var held [8]string // the names of most responses' headers, on the stack
	names := allow.storableNames(header, held[:0])
	size := len(`{"v":1,"status":,"header":{},"body":""}`) + 3 + base64.StdEncoding.EncodedLen(len(body))
	for _, name := range names {
		size += len(name) + 6
		for _, v := range header[name] {
			size += len(v) + 3
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, responseEnvelopeVersion, 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	if len(names) > 0 {
		b = append(b, `,"header":{`...)
		for i, name := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, name)
			b = append(b, ':')
			b = appendJSONStrings(b, header[name])
		}
		b = append(b, '}')
	}
	if len(body) > 0 {
		b = append(b, `,"body":"`...)
		b = base64.StdEncoding.AppendEncode(b, body)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendJSONStrings appends values as a JSON array, or null if nil.
func appendJSONStrings(b []byte, values []string) []byte {
	if values == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v)
	}
	return append(b, ']')
}

// appendJSONString appends s as json.Marshal writes it: as it is between
// quotes when it is printable ASCII that JSON and json.Marshal's HTML
// escaping leave alone, and through json.Marshal otherwise.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeResponse reads an envelope of any supported version, with the
// headers of allow.
func decodeResponse(allow replayed, b []byte) (storedResponse, error) {
	var env responseEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return storedResponse{}, fmt.Errorf("%w: %w", receiver.ErrUnreadableResult, err)
	}
	switch env.V {
	case 1:
		if env.Status < 200 || env.Status > 999 {
			return storedResponse{}, fmt.Errorf("%w: status %d", receiver.ErrUnreadableResult, env.Status)
		}
		return storedResponse{status: env.Status, header: allow.replayable(env.Header), body: env.Body}, nil
	default:
		return storedResponse{}, fmt.Errorf("%w: response envelope version %d is not supported", receiver.ErrUnreadableResult, env.V)
	}
}

// replayedByDefault are the response headers a replay sends: the
// representation's own (its type, language and location) and the Location
// of what the request created. [WithReplayedHeaders] adds others.
var replayedByDefault = []string{"Content-Type", "Content-Language", "Content-Location", "Location"}

// neverReplayed are headers no replay may send, whatever a handler
// declares: hop-by-hop headers (RFC 9110 section 7.6.1) belong to one
// connection; Set-Cookie and Authorization would hand a session or a
// credential to whoever replays (the same client, but perhaps not the same
// session); Date, Content-Length and the replay's mark are set afresh.
var neverReplayed = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Set-Cookie": true, "Authorization": true, "Www-Authenticate": true, "Date": true, "Content-Length": true,
	ReplayedHeader: true,
}

// replayed is the allow-list of response headers that are stored and
// replayed, by canonical name.
type replayed map[string]bool

// newReplayed returns the default allow-list and names. A name of
// neverReplayed panics: declaring it is a programming error that would
// leak what it carries.
func newReplayed(names []string) replayed {
	r := make(replayed, len(replayedByDefault)+len(names))
	for _, name := range append(slices.Clone(replayedByDefault), names...) {
		name = http.CanonicalHeaderKey(name)
		if neverReplayed[name] {
			panic(fmt.Sprintf("idempotencykey: the %s header is never replayed", name))
		}
		r[name] = true
	}
	return r
}

// storableNames appends to names, and sorts, the names of the headers of h
// that allow replays: those it lists, unless Connection names them.
func (allow replayed) storableNames(h http.Header, names []string) []string {
	connection := h["Connection"] // as h.Values("Connection"), looked up once
	for name := range h {
		if !allow[http.CanonicalHeaderKey(name)] || namedByConnection(connection, name) {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// replayable is the part of a stored header that a replay may send: the
// names storableNames keeps, as they were written. encodeResponse stores no
// other, but whoever can write the store, an older version, another
// allow-list or a bug can have: a replayed Set-Cookie would hand one
// client's session to another, a stored Content-Length or
// Transfer-Encoding would frame the replay wrong. So the filter runs again
// on the way out.
func (allow replayed) replayable(stored http.Header) http.Header {
	if len(stored) == 0 {
		return nil
	}
	var held [8]string
	names := allow.storableNames(stored, held[:0])
	h := make(http.Header, len(names))
	for _, name := range names {
		h[name] = stored[name]
	}
	return h
}

// namedByConnection reports whether the values of a Connection header name
// the header name.
func namedByConnection(connection []string, name string) bool {
	for _, v := range connection {
		for token := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), name) {
				return true
			}
		}
	}
	return false
}
