package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// Response is what Send got back: the status, the headers and the whole
// body.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Send makes one request to url through client (http.DefaultClient when
// nil), body as JSON, with the given headers (name, value pairs), and
// reads the whole answer. A request that gets no answer fails t
// (t.Errorf) and returns the zero Response.
func Send(t testing.TB, client *http.Client, method, url, body string, header ...string) Response {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return Response{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%s %s: reading: %v", method, url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// PostNew posts body to url as JSON with a fresh Idempotency-Key unless
// header (name, value pairs) sets one, so that each call is a new request
// to an API behind the Idempotency-Key face, and returns the status.
func PostNew(t testing.TB, url, body string, header ...string) int {
	t.Helper()
	return Send(t, nil, http.MethodPost, url, body, append([]string{"Idempotency-Key", uuid.NewString()}, header...)...).Status
}
