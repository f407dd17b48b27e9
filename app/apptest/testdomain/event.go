package testdomain

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
	"github.com/onceflow/onceflow/problem"
)

// ErrMalformed matches every error of decoding an event that is not JSON
// or has invalid fields. A redelivery cannot fix it: the domain's
// Permanent reports it, so the message goes to the poison topic with the
// error, which names the fields, as its reason.
var ErrMalformed = errors.New("malformed event")

// ErrRefused is an effect refused for good, as a provider refuses a card:
// the domain's Permanent reports it too. It is the provider's
// [provider.ErrRefused], which the charge route's error wraps while the
// provider refuses every charge ([provider.Provider.Refuse]); tests also
// wrap a handler to return it (see [WithMiddleware]).
var ErrRefused = provider.ErrRefused

// Event is the payload of both topics: a request on TopicRequested, and
// the same request with the provider's charge on TopicCharged.
type Event struct {
	// Client is the API client that sent the request
	// (middleware.ClientFromContext); empty for the anonymous one, and
	// in a producer's event. Printable UTF-8 of at most 256 bytes.
	Client string `json:"client,omitempty"`
	// ID is the client's id of the request: 1 to 128 of A-Z, a-z, 0-9,
	// '.', '_', ':' and '-'.
	ID string `json:"id"`
	// Amount is what to charge, a positive integer.
	Amount int64 `json:"amount"`
	// Charge is the provider's id of the charge, set on TopicCharged.
	Charge string `json:"charge,omitempty"`
}

// idPattern is what an id (and a correlation id from a client) may be.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Key is the event's idempotency key, and the id of its ledger rows: ID,
// after Client and a slash when it has one. An ID holds no slash, so two
// clients' requests never share a key.
func (e Event) Key() string {
	if e.Client == "" {
		return e.ID
	}
	return e.Client + "/" + e.ID
}

// Message is e as another team's producer sends it, with Watermill alone:
// a new UUID, the JSON payload and metadata idempotency_key set to Key.
func (e Event) Message() *message.Message {
	payload, _ := json.Marshal(e) // strings and an integer always encode
	msg := message.NewMessage(watermill.NewUUID(), payload)
	msg.Metadata.Set("idempotency_key", e.Key()) // middleware.MetadataKey: the message contract
	return msg
}

// Decode decodes and validates an event's payload. Unknown fields are
// ignored, so that producers may add some. Every error matches
// ErrMalformed and names the invalid fields.
func Decode(payload []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(payload, &e); err != nil {
		if f, ok := typeError(err); ok {
			return Event{}, malformed(f)
		}
		return Event{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if fields := e.invalid(); len(fields) > 0 {
		return Event{}, malformed(fields...)
	}
	return e, nil
}

// invalid lists e's invalid fields, in the order of the fields.
func (e Event) invalid() []problem.FieldError {
	var fields []problem.FieldError
	if len(e.Client) > 256 || strings.ContainsFunc(e.Client, unicode.IsControl) {
		fields = append(fields, problem.FieldError{Field: "client", Detail: "must be printable UTF-8 of at most 256 bytes"})
	}
	if !idPattern.MatchString(e.ID) {
		fields = append(fields, problem.FieldError{Field: "id", Detail: "must be 1 to 128 of A-Z, a-z, 0-9, '.', '_', ':' and '-'"})
	}
	if e.Amount <= 0 {
		fields = append(fields, problem.FieldError{Field: "amount", Detail: "must be a positive integer"})
	}
	if e.Charge != "" && !idPattern.MatchString(e.Charge) {
		fields = append(fields, problem.FieldError{Field: "charge", Detail: "must be a provider's charge id"})
	}
	return fields
}

// typeError is the field of a JSON value of the wrong type.
func typeError(err error) (problem.FieldError, bool) {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return problem.FieldError{Field: te.Field, Detail: "has the wrong JSON type"}, true
	}
	return problem.FieldError{}, false
}

// malformed is the error of an event with invalid fields.
func malformed(fields ...problem.FieldError) error {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Error()
	}
	return fmt.Errorf("%w: %s", ErrMalformed, strings.Join(parts, "; "))
}
