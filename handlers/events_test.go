package handlers_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware"
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
	if got := msg.Metadata.Get(middleware.MetadataKey); got != want.PaymentID {
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
