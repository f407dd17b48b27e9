package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/middleware/consume"
)

// ErrMalformed matches every error of decoding an event whose payload is not
// valid JSON or fails validation. Such a message can never succeed, so the
// router should not retry it but send it to the poison queue with the error
// as the reason. Errors matching ErrMalformed from DecodePaymentRequested and
// DecodePaymentCharged also match *ValidationError when fields are invalid.
var ErrMalformed = errors.New("malformed message")

// PaymentRequested is published on TopicPaymentRequested when the API
// accepts a payment. Client is who owns it (see [Payment]); it is left out
// of the JSON when empty, so an anonymous payment's payload is what it was
// before events had an owner, and an event without one is anonymous.
type PaymentRequested struct {
	Client      string    `json:"client,omitempty"`
	PaymentID   string    `json:"payment_id"`
	CustomerID  string    `json:"customer_id"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	RequestedAt time.Time `json:"requested_at"`
}

// PaymentCharged is published on TopicPaymentCharged when a payment has been
// charged. Client is as in [PaymentRequested].
type PaymentCharged struct {
	Client      string    `json:"client,omitempty"`
	PaymentID   string    `json:"payment_id"`
	CustomerID  string    `json:"customer_id"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	ChargeID    string    `json:"charge_id"`
	ChargedAt   time.Time `json:"charged_at"`
}

// Payment returns the payment the event is about.
func (e PaymentRequested) Payment() Payment {
	return Payment{Client: e.Client, ID: e.PaymentID, CustomerID: e.CustomerID, AmountCents: e.AmountCents, Currency: e.Currency}
}

// Payment returns the payment the event is about.
func (e PaymentCharged) Payment() Payment {
	return Payment{Client: e.Client, ID: e.PaymentID, CustomerID: e.CustomerID, AmountCents: e.AmountCents, Currency: e.Currency}
}

// Message encodes e as a JSON message with a new UUID and metadata
// [consume.MetadataKey] set to the payment's [Payment.IdempotencyKey].
func (e PaymentRequested) Message() (*message.Message, error) {
	return newMessage(e, e.Payment().IdempotencyKey())
}

// Message encodes e as a JSON message with a new UUID and metadata
// [consume.MetadataKey] set to the payment's [Payment.IdempotencyKey].
func (e PaymentCharged) Message() (*message.Message, error) {
	return newMessage(e, e.Payment().IdempotencyKey())
}

func newMessage(event any, key string) (*message.Message, error) {
	payload, err := json.Marshal(event)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", event, err)
	}
	msg := message.NewMessage(uuid.NewString(), payload)
	msg.Metadata.Set(consume.MetadataKey, key)
	return msg, nil
}

// DecodePaymentRequested decodes and validates a PaymentRequested payload.
// Unknown fields are ignored, so producers may add fields. Every error
// matches ErrMalformed and names the offending fields.
func DecodePaymentRequested(payload []byte) (PaymentRequested, error) {
	var e PaymentRequested
	if err := decodeEvent("PaymentRequested", "requested_at", payload, &e); err != nil {
		return PaymentRequested{}, err
	}
	var fe fieldErrors
	validatePayment(&fe, e.Payment())
	if err := fe.err(); err != nil {
		return PaymentRequested{}, fmt.Errorf("%w: PaymentRequested: %w", ErrMalformed, err)
	}
	return e, nil
}

// DecodePaymentCharged decodes and validates a PaymentCharged payload.
// Unknown fields are ignored, so producers may add fields. Every error
// matches ErrMalformed and names the offending fields.
func DecodePaymentCharged(payload []byte) (PaymentCharged, error) {
	var e PaymentCharged
	if err := decodeEvent("PaymentCharged", "charged_at", payload, &e); err != nil {
		return PaymentCharged{}, err
	}
	var fe fieldErrors
	validatePayment(&fe, e.Payment())
	if e.ChargeID == "" {
		fe.add("charge_id", "must not be empty")
	}
	if err := fe.err(); err != nil {
		return PaymentCharged{}, fmt.Errorf("%w: PaymentCharged: %w", ErrMalformed, err)
	}
	return e, nil
}

// decodeEvent unmarshals payload into the event e, translating a wrongly
// typed field, or a malformed time in its one time field timeField, into a
// ValidationError naming the field.
func decodeEvent(name, timeField string, payload []byte, e any) error {
	err := json.Unmarshal(payload, e)
	if err == nil {
		return nil
	}
	f, ok := jsonFieldError(err)
	var timeErr *time.ParseError
	if !ok && errors.As(err, &timeErr) {
		f, ok = FieldError{Field: timeField, Detail: "must be an RFC 3339 time"}, true
	}
	if ok {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, name, &ValidationError{Fields: []FieldError{f}})
	}
	return fmt.Errorf("%w: %s: %w", ErrMalformed, name, err)
}
