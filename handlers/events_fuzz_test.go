package handlers_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware/consume"
)

// eventFields are the JSON names a decoding error may blame.
var eventFields = map[string]bool{
	"client": true, "payment_id": true, "customer_id": true, "amount_cents": true, "currency": true,
	"requested_at": true, "charge_id": true, "charged_at": true,
}

// FuzzDecodePaymentRequested decodes arbitrary payloads. Either the error
// matches ErrMalformed (and a ValidationError names only fields of the
// event), or the event is valid and its own message decodes to the same
// event.
//
//	go test -run '^$' -fuzz '^FuzzDecodePaymentRequested$' ./handlers/
func FuzzDecodePaymentRequested(f *testing.F) {
	f.Add([]byte(`{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR","requested_at":"2025-01-02T03:04:05.000000006+01:00"}`))
	f.Add([]byte(`{"client":"client-a/x","payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR","requested_at":"2025-01-02T03:04:05Z"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := handlers.DecodePaymentRequested(payload)
		if err != nil {
			checkMalformed(t, payload, err)
			return
		}
		checkPayment(t, payload, e.Payment())
		msg, err := e.Message()
		if err != nil {
			t.Fatalf("payload %q decoded to %+v, which does not encode: %v", payload, e, err)
		}
		again, err := handlers.DecodePaymentRequested(msg.Payload)
		if err != nil || again.Payment() != e.Payment() || !sameTime(again.RequestedAt, e.RequestedAt) {
			t.Fatalf("payload %q decoded to %+v, re-encoded as %s, decoded to %+v, %v", payload, e, msg.Payload, again, err)
		}
		if k := msg.Metadata.Get(consume.MetadataKey); k != e.Payment().IdempotencyKey() ||
			(e.Client == "") != (k == e.PaymentID) || !strings.HasSuffix(k, e.PaymentID) {
			t.Fatalf("message of %+v has idempotency key %q", e, k)
		}
	})
}

// FuzzDecodePaymentCharged is FuzzDecodePaymentRequested for
// PaymentCharged, which also needs a charge id.
//
//	go test -run '^$' -fuzz '^FuzzDecodePaymentCharged$' ./handlers/
func FuzzDecodePaymentCharged(f *testing.F) {
	f.Add([]byte(`{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR","charge_id":"ch-1","charged_at":"2025-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"client":"client-a","payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR","charge_id":"ch-1","charged_at":"2025-01-02T03:04:05Z"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := handlers.DecodePaymentCharged(payload)
		if err != nil {
			checkMalformed(t, payload, err)
			return
		}
		checkPayment(t, payload, e.Payment())
		if e.ChargeID == "" {
			t.Fatalf("payload %q decoded without a charge id", payload)
		}
		msg, err := e.Message()
		if err != nil {
			t.Fatalf("payload %q decoded to %+v, which does not encode: %v", payload, e, err)
		}
		again, err := handlers.DecodePaymentCharged(msg.Payload)
		if err != nil || again.Payment() != e.Payment() || again.ChargeID != e.ChargeID ||
			!sameTime(again.ChargedAt, e.ChargedAt) {
			t.Fatalf("payload %q decoded to %+v, re-encoded as %s, decoded to %+v, %v", payload, e, msg.Payload, again, err)
		}
	})
}

func checkMalformed(t *testing.T, payload []byte, err error) {
	t.Helper()
	if !errors.Is(err, handlers.ErrMalformed) {
		t.Fatalf("payload %q: %v, want ErrMalformed", payload, err)
	}
	var ve *handlers.ValidationError
	if !errors.As(err, &ve) {
		return
	}
	if len(ve.Fields) == 0 {
		t.Fatalf("payload %q: a ValidationError with no field", payload)
	}
	for _, f := range ve.Fields {
		if !eventFields[f.Field] || f.Detail == "" {
			t.Fatalf("payload %q: error names field %q (%q)", payload, f.Field, f.Detail)
		}
	}
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// checkPayment checks what a decoded payment promises.
func checkPayment(t *testing.T, payload []byte, p handlers.Payment) {
	t.Helper()
	if len(p.Client) > handlers.MaxClientLength || !utf8.ValidString(p.Client) || strings.ContainsFunc(p.Client, unicode.IsControl) {
		t.Fatalf("payload %q decoded to a payment of an invalid client %+v", payload, p)
	}
	if !handlers.ValidPaymentID(p.ID) || strings.TrimSpace(p.CustomerID) == "" ||
		len(p.CustomerID) > handlers.MaxCustomerIDLength || !utf8.ValidString(p.CustomerID) ||
		p.AmountCents <= 0 || !currency.MatchString(p.Currency) {
		t.Fatalf("payload %q decoded to an invalid payment %+v", payload, p)
	}
}

// sameTime reports whether a and b are the same instant written the same
// way (RFC 3339 with nanoseconds, offset included).
func sameTime(a, b time.Time) bool {
	return a.Equal(b) && a.Format(time.RFC3339Nano) == b.Format(time.RFC3339Nano)
}
