package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/ledgertest"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/consume"
)

// asClient serves the API with the client identity named by the request's
// X-Test-Client header, as authentication would set it; none without it.
func asClient(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := r.Header.Get("X-Test-Client"); c != "" {
			r = r.WithContext(apikey.ContextWithClient(r.Context(), c))
		}
		api.ServeHTTP(w, r)
	})
}

// A payment belongs to the client that created it. Another client reads a
// 404 for its id, byte for byte the answer to an id nobody used; creating
// a payment of that id is answered as a fresh id is (its own payment, not
// a 409 that would tell the first exists); and each client's summary
// counts its own payments only.
func TestPaymentsBelongToTheirClient(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	pub := &recordingPublisher{}
	mux := http.NewServeMux()
	handlers.NewHTTP(ledger, pub, nil).Routes(mux)
	api := asClient(mux)
	do := func(client, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if client != "" {
			r.Header.Set("X-Test-Client", client)
		}
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w
	}

	const (
		payA = `{"payment_id":"pay-1","customer_id":"cus-a","amount_cents":100,"currency":"EUR"}`
		payB = `{"payment_id":"pay-1","customer_id":"cus-b","amount_cents":999,"currency":"USD"}`
	)
	if w := do("client-a", "POST", "/v1/payments", payA); w.Code != http.StatusAccepted {
		t.Fatalf("client A creating pay-1: %d %s", w.Code, w.Body)
	}
	a := handlers.Payment{Client: "client-a", ID: "pay-1", CustomerID: "cus-a", AmountCents: 100, Currency: "EUR"}
	ledgertest.Must(t, ledger.AppendCharge(context.Background(), a, "ch-a"))

	// Reading: B and the anonymous client get the 404 of an unused id.
	unused := do("client-b", "GET", "/v1/payments/pay-unused", "")
	for _, c := range []string{"client-b", ""} {
		w := do(c, "GET", "/v1/payments/pay-1", "")
		if w.Code != http.StatusNotFound || w.Body.String() != unused.Body.String() {
			t.Errorf("client %q reading client A's pay-1: %d %s; want the 404 of an unused id, %s", c, w.Code, w.Body, unused.Body)
		}
	}

	// Creating: B's pay-1, with other details, is B's own, answered as a
	// fresh id is.
	fresh := do("client-b", "POST", "/v1/payments", strings.Replace(payB, "pay-1", "pay-2", 1))
	w := do("client-b", "POST", "/v1/payments", payB)
	if w.Code != http.StatusAccepted || w.Body.String() != strings.Replace(fresh.Body.String(), "pay-2", "pay-1", 1) {
		t.Errorf("client B creating pay-1 (client A's id): %d %s; want what a fresh id gets, %d %s", w.Code, w.Body, fresh.Code, fresh.Body)
	}
	// Nor can a body name its owner.
	if w := do("client-b", "POST", "/v1/payments", strings.Replace(payA, "{", `{"client":"client-a",`, 1)); w.Code != http.StatusBadRequest {
		t.Errorf("a body naming a client: %d %s, want 400", w.Code, w.Body)
	}

	ledgertest.AssertState(t, ledger, "client-a", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusCharged, Charges: 1})
	ledgertest.AssertState(t, ledger, "client-b", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusAccepted})
	if w := do("client-a", "GET", "/v1/payments/pay-1", ""); w.Code != http.StatusOK ||
		strings.TrimSpace(w.Body.String()) != `{"payment_id":"pay-1","status":"charged","charges":1,"notifications":0,"receipts":0}` {
		t.Errorf("client A reading its pay-1: %d %s", w.Code, w.Body)
	}

	// The events carry the owner, and keys that tell the two payments apart.
	for i, want := range []struct{ client, key string }{{"client-a", "client-a/pay-1"}, {"client-b", "client-b/pay-2"}, {"client-b", "client-b/pay-1"}} {
		ev, err := handlers.DecodePaymentRequested(pub.msgs[i].Payload)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Client != want.client || pub.msgs[i].Metadata.Get(consume.MetadataKey) != want.key {
			t.Errorf("event %d: client %q, key %q; want %q, %q", i, ev.Client, pub.msgs[i].Metadata.Get(consume.MetadataKey), want.client, want.key)
		}
	}

	// The summary counts the caller's payments only.
	for c, want := range map[string]string{
		"client-a": `{"payments":1,"charges":1,"notifications":0,"receipts":0}`,
		"client-b": `{"payments":0,"charges":0,"notifications":0,"receipts":0}`,
		"":         `{"payments":0,"charges":0,"notifications":0,"receipts":0}`,
	} {
		if w := do(c, "GET", "/v1/ledger/summary", ""); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("summary of client %q: %d %s, want %s", c, w.Code, w.Body, want)
		}
	}
}
