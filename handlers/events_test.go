package handlers_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware/consume"
)

func TestPaymentRequestedRoundTrip(t *testing.T) {
	t.Parallel()
	want := handlers.PaymentRequested{
		PaymentID: "pay:1.a_b-c", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR",
		RequestedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	msg, err := want.Message()
	if err != nil {
		t.Fatal(err)
	}
	if msg.UUID == "" {
		t.Error("message has no UUID")
	}
	if got := msg.Metadata.Get(consume.MetadataKey); got != want.PaymentID {
		t.Errorf("idempotency key = %q, want %q", got, want.PaymentID)
	}
	got, err := handlers.DecodePaymentRequested(msg.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
}

// A payment's events carry its client, and a key of the client's own; an
// event without a client (every event before they had one) is the
// anonymous client's, keyed by the payment id as it always was.
func TestEventsCarryTheirClient(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	old := `{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR","requested_at":"2025-01-02T03:04:05Z"}`
	e, err := handlers.DecodePaymentRequested([]byte(old))
	if err != nil || e.Client != "" {
		t.Fatalf("decoding an event without a client: %+v, %v", e, err)
	}
	msg, err := e.Message()
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Payload) != old || msg.Metadata.Get(consume.MetadataKey) != "pay-1" {
		t.Errorf("an anonymous payment's event: %s key %q, want %s key pay-1 as before", msg.Payload, msg.Metadata.Get(consume.MetadataKey), old)
	}

	for _, client := range []string{"client-a", "team/a", "ünïcode client"} {
		charged := handlers.PaymentCharged{Client: client, PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1, Currency: "EUR", ChargeID: "ch-1", ChargedAt: at}
		msg, err := charged.Message()
		if err != nil {
			t.Fatal(err)
		}
		got, err := handlers.DecodePaymentCharged(msg.Payload)
		if err != nil || got != charged {
			t.Errorf("client %q: decoded %+v, %v; want %+v", client, got, err, charged)
		}
		if k := msg.Metadata.Get(consume.MetadataKey); k != client+"/pay-1" {
			t.Errorf("client %q: idempotency key %q, want %q", client, k, client+"/pay-1")
		}
	}
}

func TestDecodeRejectsMalformedEvents(t *testing.T) {
	t.Parallel()
	const valid = `"payment_id":"pay-1","customer_id":"cus-1","amount_cents":100,"currency":"EUR"`
	tests := []struct {
		name    string
		payload string
		field   string // "" when the error concerns no single field
	}{
		{"not JSON", `{`, ""},
		{"not an object", `[1]`, ""},
		{"empty payment_id", `{"payment_id":"","customer_id":"c","amount_cents":1,"currency":"EUR"}`, "payment_id"},
		{"payment_id with a space", `{"payment_id":"a b","customer_id":"c","amount_cents":1,"currency":"EUR"}`, "payment_id"},
		{"payment_id too long", `{"payment_id":"` + strings.Repeat("a", 129) + `","customer_id":"c","amount_cents":1,"currency":"EUR"}`, "payment_id"},
		{"missing customer_id", `{"payment_id":"p","amount_cents":1,"currency":"EUR"}`, "customer_id"},
		{"blank customer_id", `{"payment_id":"p","customer_id":"  ","amount_cents":1,"currency":"EUR"}`, "customer_id"},
		{"zero amount", `{"payment_id":"p","customer_id":"c","amount_cents":0,"currency":"EUR"}`, "amount_cents"},
		{"negative amount", `{"payment_id":"p","customer_id":"c","amount_cents":-5,"currency":"EUR"}`, "amount_cents"},
		{"fractional amount", `{"payment_id":"p","customer_id":"c","amount_cents":1.5,"currency":"EUR"}`, "amount_cents"},
		{"amount as string", `{"payment_id":"p","customer_id":"c","amount_cents":"1","currency":"EUR"}`, "amount_cents"},
		{"lower-case currency", `{"payment_id":"p","customer_id":"c","amount_cents":1,"currency":"eur"}`, "currency"},
		{"long currency", `{"payment_id":"p","customer_id":"c","amount_cents":1,"currency":"EURO"}`, "currency"},
		{"malformed requested_at", `{"payment_id":"p","customer_id":"c","amount_cents":1,"currency":"EUR","requested_at":"yesterday"}`, "requested_at"},
		{"currency as number", `{"payment_id":"p","customer_id":"c","amount_cents":1,"currency":978}`, "currency"},
		{"client as number", `{"client":7,"payment_id":"p","customer_id":"c","amount_cents":1,"currency":"EUR"}`, "client"},
		{"client with a control character", `{"client":"a\u0000b","payment_id":"p","customer_id":"c","amount_cents":1,"currency":"EUR"}`, "client"},
		{"client too long", `{"client":"` + strings.Repeat("c", handlers.MaxClientLength+1) + `","payment_id":"p","customer_id":"c","amount_cents":1,"currency":"EUR"}`, "client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := handlers.DecodePaymentRequested([]byte(tt.payload))
			assertMalformed(t, err, tt.field)
		})
	}

	t.Run("PaymentCharged without charge_id", func(t *testing.T) {
		t.Parallel()
		_, err := handlers.DecodePaymentCharged([]byte(`{` + valid + `}`))
		assertMalformed(t, err, "charge_id")
	})

	t.Run("unknown fields are ignored", func(t *testing.T) {
		t.Parallel()
		if _, err := handlers.DecodePaymentRequested([]byte(`{` + valid + `,"new_field":true}`)); err != nil {
			t.Errorf("unexpected error: %v", err)
		}
	})
}

// assertMalformed checks that err matches ErrMalformed and, when field is
// set, names field as the one invalid field.
func assertMalformed(t *testing.T, err error, field string) {
	t.Helper()
	if !errors.Is(err, handlers.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	if field == "" {
		return
	}
	var verr *handlers.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	if len(verr.Fields) != 1 || verr.Fields[0].Field != field {
		t.Errorf("invalid fields = %+v, want only %s", verr.Fields, field)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("err %q does not name %s", err, field)
	}
}
