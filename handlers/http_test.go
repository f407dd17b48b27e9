package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/ledgertest"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/problem"
)

// recordingPublisher records what is published, or fails with err.
type recordingPublisher struct {
	err error

	mu     sync.Mutex
	topics []string
	msgs   []*message.Message
}

func (p *recordingPublisher) Publish(topic string, msgs ...*message.Message) error {
	if p.err != nil {
		return p.err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		p.topics = append(p.topics, topic)
		p.msgs = append(p.msgs, m)
	}
	return nil
}

const validBody = `{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR"}`

var recorded = handlers.Payment{ID: "pay-9", CustomerID: "cus-9", AmountCents: 900, Currency: "USD"}

func TestHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		method, path  string
		contentType   string
		body          string
		ledgerDown    bool
		publishErr    error
		wantStatus    int
		wantFields    []string // problem: the fields it must name
		wantJSON      string   // success: the exact body
		wantPublished int
	}{
		{name: "accepted", method: "POST", path: "/v1/payments", body: validBody,
			wantStatus: 202, wantJSON: `{"payment_id":"pay-1","status":"accepted"}`, wantPublished: 1},
		{name: "accepted without content type", method: "POST", path: "/v1/payments", contentType: "-", body: validBody,
			wantStatus: 202, wantJSON: `{"payment_id":"pay-1","status":"accepted"}`, wantPublished: 1},
		{name: "same payment again is accepted and published again", method: "POST", path: "/v1/payments",
			body:       `{"payment_id":"pay-9","customer_id":"cus-9","amount_cents":900,"currency":"USD"}`,
			wantStatus: 202, wantJSON: `{"payment_id":"pay-9","status":"accepted"}`, wantPublished: 1},
		{name: "empty body", method: "POST", path: "/v1/payments", body: ``, wantStatus: 400},
		{name: "invalid JSON", method: "POST", path: "/v1/payments", body: `{"payment_id":`, wantStatus: 400},
		{name: "array body", method: "POST", path: "/v1/payments", body: `[]`, wantStatus: 400},
		{name: "trailing data", method: "POST", path: "/v1/payments", body: validBody + `{}`, wantStatus: 400},
		{name: "unknown field", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"p","customer_id":"c","amount_cents":1,"currency":"EUR","coupon":"x"}`, wantStatus: 400, wantFields: []string{"coupon"}},
		{name: "bad payment_id", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"a/b","customer_id":"c","amount_cents":1,"currency":"EUR"}`, wantStatus: 400, wantFields: []string{"payment_id"}},
		{name: "missing customer_id", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"p","amount_cents":1,"currency":"EUR"}`, wantStatus: 400, wantFields: []string{"customer_id"}},
		{name: "zero amount", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"p","customer_id":"c","amount_cents":0,"currency":"EUR"}`, wantStatus: 400, wantFields: []string{"amount_cents"}},
		{name: "fractional amount", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"p","customer_id":"c","amount_cents":9.99,"currency":"EUR"}`, wantStatus: 400, wantFields: []string{"amount_cents"}},
		{name: "bad currency", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"p","customer_id":"c","amount_cents":1,"currency":"eur"}`, wantStatus: 400, wantFields: []string{"currency"}},
		{name: "every field invalid", method: "POST", path: "/v1/payments", body: `{}`, wantStatus: 400,
			wantFields: []string{"payment_id", "customer_id", "amount_cents", "currency"}},
		{name: "payment id used with other details", method: "POST", path: "/v1/payments",
			body:       `{"payment_id":"pay-9","customer_id":"cus-9","amount_cents":901,"currency":"USD"}`,
			wantStatus: 409, wantFields: []string{"payment_id"}},
		{name: "body too large", method: "POST", path: "/v1/payments",
			body: `{"payment_id":"p","customer_id":"` + strings.Repeat("x", handlers.MaxRequestBody) + `"}`, wantStatus: 413},
		{name: "not JSON", method: "POST", path: "/v1/payments", contentType: "text/plain", body: validBody, wantStatus: 415},
		{name: "ledger down on create", method: "POST", path: "/v1/payments", body: validBody, ledgerDown: true, wantStatus: 500},
		{name: "publish fails", method: "POST", path: "/v1/payments", body: validBody, publishErr: errors.New("broker down"), wantStatus: 503},

		{name: "payment found", method: "GET", path: "/v1/payments/pay-9",
			wantStatus: 200, wantJSON: `{"payment_id":"pay-9","status":"charged","charges":1,"notifications":0,"receipts":0}`},
		{name: "payment not found", method: "GET", path: "/v1/payments/pay-1", wantStatus: 404},
		{name: "malformed payment id", method: "GET", path: "/v1/payments/" + strings.Repeat("a", 129), wantStatus: 404},
		{name: "ledger down on read", method: "GET", path: "/v1/payments/pay-9", ledgerDown: true, wantStatus: 500},

		{name: "summary", method: "GET", path: "/v1/ledger/summary",
			wantStatus: 200, wantJSON: `{"payments":1,"charges":1,"notifications":0,"receipts":0}`},
		{name: "ledger down on summary", method: "GET", path: "/v1/ledger/summary", ledgerDown: true, wantStatus: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ledger handlers.Ledger = failingLedger{}
			if !tt.ledgerDown {
				mem := memory.NewLedger()
				ledgertest.MustRecord(t, mem, recorded)
				ledgertest.Must(t, mem.AppendCharge(context.Background(), recorded, "ch-9"))
				ledger = mem
			}
			pub := &recordingPublisher{err: tt.publishErr}
			mux := http.NewServeMux()
			handlers.NewHTTP(ledger, pub, nil).Routes(mux)

			r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			switch tt.contentType {
			case "":
				r.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				r.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)

			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus >= 400 {
				assertProblem(t, w, tt.wantStatus, tt.wantFields)
			} else {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if got := strings.TrimSpace(w.Body.String()); got != tt.wantJSON {
					t.Errorf("body = %s, want %s", got, tt.wantJSON)
				}
			}
			if len(pub.msgs) != tt.wantPublished {
				t.Errorf("published %d messages, want %d", len(pub.msgs), tt.wantPublished)
			}
		})
	}
}

// assertProblem checks that w holds an RFC 9457 problem with status that
// names exactly fields (in any order) when fields are given.
func assertProblem(t *testing.T, w *httptest.ResponseRecorder, status int, fields []string) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != problem.ContentType {
		t.Errorf("Content-Type = %q, want %s", ct, problem.ContentType)
	}
	var p problem.Details
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", w.Body, err)
	}
	if p.Status != status || p.Type == "" || p.Title == "" || p.Detail == "" {
		t.Errorf("problem = %+v, want status %d and type, title and detail set", p, status)
	}
	var got []string
	for _, f := range p.Errors {
		got = append(got, f.Field)
		if f.Detail == "" {
			t.Errorf("field %s has no detail", f.Field)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(fields))
	if fields != nil && !slices.Equal(got, want) {
		t.Errorf("problem names fields %v, want %v", got, want)
	}
}

// A request names an unknown field 64 KiB long, of "<": the answer, which
// the Idempotency-Key middleware stores and replays, quotes a bounded
// prefix of it (it was 393,276 bytes, each "<" escaped as \u003c).
func TestAnUnknownFieldIsQuotedBounded(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	handlers.NewHTTP(memory.NewLedger(), &recordingPublisher{}, nil).Routes(mux)
	body := `{"` + strings.Repeat("<", 65520) + `":1}`
	r := httptest.NewRequest("POST", "/v1/payments", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest || w.Body.Len() > 2<<10 {
		t.Fatalf("answer %d of %d bytes to a %d-byte request, want a 400 of at most 2 KiB", w.Code, w.Body.Len(), len(body))
	}
	assertProblem(t, w, http.StatusBadRequest, nil)
	t.Logf("a %d-byte request, a %d-byte answer", len(body), w.Body.Len())
}

func TestCreatePaymentPublishesPaymentRequested(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	pub := &recordingPublisher{}
	mux := http.NewServeMux()
	handlers.NewHTTP(ledger, pub, nil).Routes(mux)

	r := httptest.NewRequest("POST", "/v1/payments", strings.NewReader(validBody))
	r.Header.Set(handlers.CorrelationIDHeader, "corr-42")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted {
		t.Fatalf("status = %d; body %s", w.Code, w.Body)
	}
	if loc := w.Header().Get("Location"); loc != "/v1/payments/pay-1" {
		t.Errorf("Location = %q", loc)
	}
	if len(pub.msgs) != 1 || pub.topics[0] != handlers.TopicPaymentRequested {
		t.Fatalf("published %v, want one message on %s", pub.topics, handlers.TopicPaymentRequested)
	}
	msg := pub.msgs[0]
	ev, err := handlers.DecodePaymentRequested(msg.Payload)
	if err != nil {
		t.Fatal(err)
	}
	want := handlers.Payment{ID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR"}
	if ev.Payment() != want || ev.RequestedAt.IsZero() {
		t.Errorf("PaymentRequested = %+v, want %+v with requested_at", ev, want)
	}
	if got := msg.Metadata.Get(consume.MetadataKey); got != "pay-1" {
		t.Errorf("idempotency key = %q, want pay-1", got)
	}
	if got := wmmw.MessageCorrelationID(msg); got != "corr-42" {
		t.Errorf("correlation id = %q, want corr-42", got)
	}
	ledgertest.AssertState(t, ledger, "", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusAccepted})

	// Sending the same payment again publishes the same payload, so the
	// receiver sees a duplicate, not a key reused for another payload.
	time.Sleep(time.Millisecond)
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/v1/payments", strings.NewReader(validBody)))
	if w.Code != http.StatusAccepted || len(pub.msgs) != 2 {
		t.Fatalf("re-sent payment: status %d, %d messages published", w.Code, len(pub.msgs))
	}
	if !bytes.Equal(pub.msgs[1].Payload, msg.Payload) {
		t.Errorf("re-sent payment published another payload:\n%s\n%s", pub.msgs[1].Payload, msg.Payload)
	}
}

func TestRoutesWrapOnlyUnsafeMethods(t *testing.T) {
	t.Parallel()
	var order []string
	wrap := func(name string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				order = append(order, name+" "+r.Pattern)
				next.ServeHTTP(w, r)
			})
		}
	}
	mux := http.NewServeMux()
	handlers.NewHTTP(memory.NewLedger(), &recordingPublisher{}, nil).Routes(mux, wrap("outer"), wrap("inner"))

	for _, r := range []*http.Request{
		httptest.NewRequest("POST", "/v1/payments", strings.NewReader(validBody)),
		httptest.NewRequest("GET", "/v1/payments/pay-1", nil),
		httptest.NewRequest("GET", "/v1/ledger/summary", nil),
	} {
		mux.ServeHTTP(httptest.NewRecorder(), r)
	}
	want := []string{"outer " + handlers.RouteCreatePayment, "inner " + handlers.RouteCreatePayment}
	if !slices.Equal(order, want) {
		t.Errorf("middleware ran %q, want %q", order, want)
	}
	// IdempotentRoutes names exactly the wrapped routes, for the key admin.
	var wrapped []string
	for _, o := range order {
		if p, ok := strings.CutPrefix(o, "inner "); ok {
			wrapped = append(wrapped, p)
		}
	}
	if got := handlers.IdempotentRoutes(); !slices.Equal(got, wrapped) {
		t.Errorf("IdempotentRoutes() = %q, want the wrapped %q", got, wrapped)
	}
}
