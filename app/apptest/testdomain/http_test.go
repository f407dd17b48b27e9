package testdomain_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/problem"
)

// publisher keeps what it is given, or fails with err.
type publisher struct {
	err  error
	msgs []*message.Message
}

func (p *publisher) Publish(topic string, msgs ...*message.Message) error {
	if p.err != nil {
		return p.err
	}
	if topic != testdomain.TopicRequested {
		return errors.New("published to " + topic)
	}
	p.msgs = append(p.msgs, msgs...)
	return nil
}

// serveAPI serves the domain's API on l and pub, without the face, as
// client (none when empty).
func serveAPI(t *testing.T, l testdomain.Ledger, pub testdomain.Publisher, client string) *httptest.Server {
	mux := http.NewServeMux()
	testdomain.API(l, pub, nil).Register(mux, func(h http.Handler) http.Handler { return h })
	var h http.Handler = mux
	if client != "" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mux.ServeHTTP(w, r.WithContext(apikey.ContextWithClient(r.Context(), client)))
		})
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func do(t *testing.T, method, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A request is recorded and published, keyed by its client and id,
// correlated as its header says; it is then read back.
func TestAPIAcceptsARequest(t *testing.T) {
	t.Parallel()
	l, pub := testdomain.NewMemoryLedger(), &publisher{}
	s := serveAPI(t, l, pub, "client-a")
	resp, body := do(t, http.MethodPost, s.URL+"/v1/charges", `{"id":"a-1","amount":5}`, testdomain.CorrelationHeader, "corr-1")
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") != "/v1/charges/a-1" ||
		resp.Header.Get(testdomain.CorrelationHeader) != "corr-1" || !strings.Contains(body, `"id":"a-1"`) {
		t.Fatalf("POST: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if len(pub.msgs) != 1 {
		t.Fatalf("published %d messages, want 1", len(pub.msgs))
	}
	msg := pub.msgs[0]
	if e, err := testdomain.Decode(msg.Payload); err != nil || e != (testdomain.Event{Client: "client-a", ID: "a-1", Amount: 5}) {
		t.Errorf("published %s: %+v, %v", msg.Payload, e, err)
	}
	if k, c := msg.Metadata.Get(consume.MetadataKey), wmmw.MessageCorrelationID(msg); k != "client-a/a-1" || c != "corr-1" {
		t.Errorf("published with key %q and correlation id %q, want client-a/a-1 and corr-1", k, c)
	}

	var got testdomain.Tally
	for _, path := range []string{"/v1/charges/a-1", "/v1/summary"} {
		resp, body := do(t, http.MethodGet, s.URL+path, "")
		if err := json.Unmarshal([]byte(body), &got); resp.StatusCode != http.StatusOK || err != nil || got != (testdomain.Tally{Requests: counts(1, 1)}) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	// Another client's id, and an unknown one, are not found.
	other := serveAPI(t, l, pub, "client-b")
	for _, url := range []string{other.URL + "/v1/charges/a-1", s.URL + "/v1/charges/a-2"} {
		if resp, body := do(t, http.MethodGet, url, ""); resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("GET %s: %d %s, want a 404 problem", url, resp.StatusCode, body)
		}
	}
	// A correlation id that is not an id is replaced.
	resp, _ = do(t, http.MethodPost, s.URL+"/v1/charges", `{"id":"a-2","amount":5}`, testdomain.CorrelationHeader, "not one!")
	if c := resp.Header.Get(testdomain.CorrelationHeader); c == "" || c == "not one!" {
		t.Errorf("correlation id %q, want a new one", c)
	}
}

// The API's problems: a body that is not a request names what is wrong;
// a failed publish asks for a retry. Nothing is published.
func TestAPIProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		status     int
		want       string // in the problem's body
	}{
		{"not JSON", `{"id":`, http.StatusBadRequest, "the body is not a request"},
		{"wrong type", `{"id":"a-1","amount":"5"}`, http.StatusBadRequest, `"field":"amount"`},
		{"invalid fields", `{"id":"a/1","amount":0}`, http.StatusBadRequest, `"field":"id"`},
		{"unknown field", `{"id":"a-1","amount":5,"charge":"ch_1"}`, http.StatusBadRequest, `unknown field \"charge\"`},
		{"two objects", `{"id":"a-1","amount":5}{}`, http.StatusBadRequest, "nothing after it"},
	} {
		pub := &publisher{}
		resp, body := do(t, http.MethodPost, serveAPI(t, testdomain.NewMemoryLedger(), pub, "").URL+"/v1/charges", tc.body)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != problem.ContentType || !strings.Contains(body, tc.want) || len(pub.msgs) != 0 {
			t.Errorf("%s: %d %s %s, want a %d problem with %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.want)
		}
	}
	resp, body := do(t, http.MethodPost, serveAPI(t, testdomain.NewMemoryLedger(), &publisher{err: errors.New("broker down")}, "").URL+"/v1/charges",
		`{"id":"a-1","amount":5}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a failed publish: %d %v %s, want 503 with Retry-After", resp.StatusCode, resp.Header, body)
	}
	pub := &publisher{}
	broken := serveAPI(t, failingLedger{testdomain.NewMemoryLedger()}, pub, "")
	if resp, body := do(t, http.MethodPost, broken.URL+"/v1/charges", `{"id":"a-1","amount":5}`); resp.StatusCode != http.StatusInternalServerError ||
		len(pub.msgs) != 0 || strings.Contains(body, "disk") {
		t.Errorf("a ledger that fails: %d %s, want 500 without the cause, nothing published", resp.StatusCode, body)
	}
}

// failingLedger fails every Add.
type failingLedger struct{ testdomain.Ledger }

func (failingLedger) Add(context.Context, testdomain.Kind, string) error {
	return errors.New("disk full")
}
