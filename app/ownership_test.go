package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"

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
			environ := []string{"API_KEYS=key-a:client-a, key-b:client-b"}
			if ledger == "postgres" {
				environ = append(environ, "DATABASE_URL="+testenv.PostgresSchema(t))
			}
			paymentsBelongToTheirClients(t, startApp(t, environ...))
		})
	}
}

func paymentsBelongToTheirClients(t *testing.T, a *running) {
	c := http.DefaultClient
	asA, asB := []string{"Authorization", "Bearer key-a"}, []string{"Authorization", "Bearer key-b"}
	id := "pay-" + uuid.NewString()[:8]
	summaryOf := func(auth []string) summary {
		t.Helper()
		var s summary
		r := a.send(t, c, http.MethodGet, "/v1/ledger/summary", "", auth...)
		if r.status != http.StatusOK || json.Unmarshal(r.body, &s) != nil {
			t.Fatalf("summary: %d %s", r.status, r.body)
		}
		return s
	}

	if r := a.send(t, c, http.MethodPost, "/v1/payments", paymentBody(id), append(asA, "Idempotency-Key", "a-1")...); r.status != http.StatusAccepted {
		t.Fatalf("client A creating %s: %d %s", id, r.status, r.body)
	}
	waitFor(t, "client A's payment charged and notified", func() bool { return summaryOf(asA).Notifications == 1 })

	unused := a.send(t, c, http.MethodGet, "/v1/payments/pay-unused", "", asB...)
	if r := a.send(t, c, http.MethodGet, "/v1/payments/"+id, "", asB...); r.status != http.StatusNotFound || !bytes.Equal(r.body, unused.body) {
		t.Errorf("client B reading client A's payment: %d %s; want the 404 of an unused id, %s", r.status, r.body, unused.body)
	}
	if got := summaryOf(asB); got != (summary{}) {
		t.Errorf("client B's summary = %+v, want nothing of client A's", got)
	}

	other := `{"payment_id":"` + id + `","customer_id":"cust-b","amount_cents":999,"currency":"USD"}`
	if r := a.send(t, c, http.MethodPost, "/v1/payments", other, append(asB, "Idempotency-Key", "b-1")...); r.status != http.StatusAccepted {
		t.Errorf("client B creating a payment of client A's id: %d %s, want 202 as for a fresh id", r.status, r.body)
	}
	waitFor(t, "client B's payment charged and notified", func() bool { return summaryOf(asB).Notifications == 1 })
	for name, auth := range map[string][]string{"A": asA, "B": asB} {
		if got, want := summaryOf(auth), (summary{1, 1, 1}); got != want {
			t.Errorf("client %s's summary = %+v, want %+v", name, got, want)
		}
		var state struct{ Charges int }
		r := a.send(t, c, http.MethodGet, "/v1/payments/"+id, "", auth...)
		if r.status != http.StatusOK || json.Unmarshal(r.body, &state) != nil || state.Charges != 1 {
			t.Errorf("client %s reading its payment: %d %s, want one charge", name, r.status, r.body)
		}
	}
}
