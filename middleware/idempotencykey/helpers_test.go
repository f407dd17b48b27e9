package idempotencykey

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// errDriver is a store driver's error, as an outage gives it.
var errDriver = errors.New("connection refused")

// httpFixture serves "POST /things/{id}" and "POST /other" through the HTTP
// face on a memory store that can be made to fail: behind Authenticate
// when it has keys, otherwise with WithAnonymous, every caller one
// anonymous client.
type httpFixture struct {
	t     *testing.T
	mux   *http.ServeMux
	store *receivertest.FaultyStore
	rec   *receivertest.Recorder
	runs  atomic.Int32 // handler executions
}

// thingHandler is the default handler: 201 with a body naming the run, the
// id and the request body, so that a replay is told from a new run.
func thingHandler(w http.ResponseWriter, r *http.Request, run int32) {
	body, _ := io.ReadAll(r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", "/things/"+r.PathValue("id"))
	h.Set("Set-Cookie", "session=secret")
	h.Set("X-Run", fmt.Sprint(run))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"run":%d,"id":%q,"body":%q}`, run, r.PathValue("id"), body)
}

func newHTTPFixture(t *testing.T, cfg receiver.Config, keys map[string]string,
	handler func(w http.ResponseWriter, r *http.Request, run int32), opts ...Option) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, mux: http.NewServeMux(), store: receivertest.NewFaultyStore(t)}
	cfg.Store = f.store
	var r *receiver.Receiver
	r, f.rec = receivertest.NewReceiver(t, cfg)
	if handler == nil {
		handler = thingHandler
	}
	opts = append([]Option{WithReplayedHeaders("X-Run")}, opts...)
	if keys == nil {
		opts = append([]Option{WithAnonymous()}, opts...)
	}
	var h http.Handler = Middleware(r, opts...)(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		handler(w, req, f.runs.Add(1))
	}))
	if keys != nil {
		ak, err := apikey.NewKeys(keys)
		if err != nil {
			t.Fatal(err)
		}
		h = apikey.Authenticate(ak, nil)(h)
	}
	f.mux.Handle("POST /things/{id}", h)
	f.mux.Handle("POST /other", h)
	return f
}

// request is one request of a test: header holds name, value pairs.
type request struct {
	path, body string
	header     []string
}

// post builds a POST with Idempotency-Key key (none when key is "-").
func post(path, key, body string, header ...string) request {
	if key != "-" {
		header = append([]string{Header, key}, header...)
	}
	return request{path: path, body: body, header: header}
}

func (f *httpFixture) do(rq request) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, rq.path, strings.NewReader(rq.body))
	for i := 0; i+1 < len(rq.header); i += 2 {
		req.Header.Add(rq.header[i], rq.header[i+1])
	}
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, req)
	return w
}
