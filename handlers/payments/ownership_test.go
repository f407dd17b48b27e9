package payments_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
)

// With API_KEYS, the example's payments belong to their clients, through
// the whole service and its message handlers: client B reads a 404 for
// client A's payment, as for an id nobody used; creating a payment of A's
// id with other details is B's own payment (202, not the 409 that would
// tell A's exists), charged on its own; and each summary counts the
// caller's payments only. The ledger in memory, and in PostgreSQL.
func TestPaymentsBelongToTheirClients(t *testing.T) {
	for _, ledger := range []string{"memory", "postgres"} {
		t.Run(ledger, func(t *testing.T) {
			environ := []string{"API_KEYS=key-of-client-a-0123456789:client-a, key-of-client-b-0123456789:client-b"}
			if ledger == "postgres" {
				environ = append(environ, "DATABASE_URL="+testenv.PostgresSchema(t))
			}
			paymentsBelongToTheirClients(t, apptest.Start(t, payments.Domain(), environ...))
		})
	}
}

// summary is what the ownership test compares of GET /v1/ledger/summary:
// the payments, charges and notifications it waits for.
type summary struct {
	Payments      int `json:"payments"`
	Charges       int `json:"charges"`
	Notifications int `json:"notifications"`
}

func paymentsBelongToTheirClients(t *testing.T, s *apptest.Service) {
	asA, asB := []string{"Authorization", "Bearer key-of-client-a-0123456789"}, []string{"Authorization", "Bearer key-of-client-b-0123456789"}
	id := "pay-" + uuid.NewString()[:8]
	summaryOf := func(auth []string) summary {
		t.Helper()
		var got summary
		status, body := call(t, s, http.MethodGet, "/v1/ledger/summary", "", auth...)
		if status != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("summary: %d %s", status, body)
		}
		return got
	}

	body := `{"payment_id":"` + id + `","customer_id":"cust-1","amount_cents":1250,"currency":"EUR"}`
	if status, b := call(t, s, http.MethodPost, "/v1/payments", body, append(asA, "Idempotency-Key", "a-1")...); status != http.StatusAccepted {
		t.Fatalf("client A creating %s: %d %s", id, status, b)
	}
	testenv.WaitFor(t, 20*time.Second, "client A's payment charged and notified", func() bool { return summaryOf(asA).Notifications == 1 })

	_, unused := call(t, s, http.MethodGet, "/v1/payments/pay-unused", "", asB...)
	if status, b := call(t, s, http.MethodGet, "/v1/payments/"+id, "", asB...); status != http.StatusNotFound || !bytes.Equal(b, unused) {
		t.Errorf("client B reading client A's payment: %d %s; want the 404 of an unused id, %s", status, b, unused)
	}
	if got := summaryOf(asB); got != (summary{}) {
		t.Errorf("client B's summary = %+v, want nothing of client A's", got)
	}

	other := `{"payment_id":"` + id + `","customer_id":"cust-b","amount_cents":999,"currency":"USD"}`
	if status, b := call(t, s, http.MethodPost, "/v1/payments", other, append(asB, "Idempotency-Key", "b-1")...); status != http.StatusAccepted {
		t.Errorf("client B creating a payment of client A's id: %d %s, want 202 as for a fresh id", status, b)
	}
	testenv.WaitFor(t, 20*time.Second, "client B's payment charged and notified", func() bool { return summaryOf(asB).Notifications == 1 })
	for name, auth := range map[string][]string{"A": asA, "B": asB} {
		if got, want := summaryOf(auth), (summary{1, 1, 1}); got != want {
			t.Errorf("client %s's summary = %+v, want %+v", name, got, want)
		}
		var state struct{ Charges int }
		status, b := call(t, s, http.MethodGet, "/v1/payments/"+id, "", auth...)
		if status != http.StatusOK || json.Unmarshal(b, &state) != nil || state.Charges != 1 {
			t.Errorf("client %s reading its payment: %d %s, want one charge", name, status, b)
		}
	}
}

// call makes one request to the service's API with the given headers
// (name, value pairs) and returns the status and the whole body.
func call(t *testing.T, s *apptest.Service, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	r := testenv.Send(t, nil, method, s.URL+path, body, header...)
	return r.Status, r.Body
}
