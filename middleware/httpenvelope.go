package middleware

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The HTTP face stores a response as a versioned JSON envelope:
//
//	{"v":1,"status":202,"header":{"Content-Type":["application/json"]},"body":"<base64>"}
//
// As with the message envelope (envelope.go), version 1 is never changed in
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
// only the headers that storableHeader keeps.
func encodeResponse(status int, header http.Header, body []byte) ([]byte, error) {
	b, err := json.Marshal(responseEnvelope{V: responseEnvelopeVersion, Status: status,
		Header: storableHeader(header), Body: body})
	if err != nil {
		return nil, fmt.Errorf("encoding response: %w", err)
	}
	return b, nil
}

// decodeResponse reads an envelope of any supported version.
func decodeResponse(b []byte) (storedResponse, error) {
	var env responseEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return storedResponse{}, fmt.Errorf("%w: %w", ErrUnreadableResult, err)
	}
	switch env.V {
	case 1:
		if env.Status < 200 || env.Status > 999 {
			return storedResponse{}, fmt.Errorf("%w: status %d", ErrUnreadableResult, env.Status)
		}
		return storedResponse{status: env.Status, header: env.Header, body: env.Body}, nil
	default:
		return storedResponse{}, fmt.Errorf("%w: response envelope version %d is not supported", ErrUnreadableResult, env.V)
	}
}

// unstoredHeaders are never stored, so never replayed: hop-by-hop headers
// (RFC 9110 section 7.6.1) belong to one connection; Set-Cookie would hand a
// session to whoever replays; Date and Content-Length are set afresh.
var unstoredHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Set-Cookie": true, "Date": true, "Content-Length": true, ReplayedHeader: true,
}

// storableHeader returns the headers of h worth replaying: all but
// unstoredHeaders, those that Connection names, and trailers.
func storableHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for name, values := range h {
		if unstoredHeaders[http.CanonicalHeaderKey(name)] || strings.HasPrefix(name, http.TrailerPrefix) ||
			namedByConnection(h, name) {
			continue
		}
		out[name] = values
	}
	return out
}

func namedByConnection(h http.Header, name string) bool {
	for _, v := range h.Values("Connection") {
		for token := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), name) {
				return true
			}
		}
	}
	return false
}
