package handlers

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/onceflow/onceflow/problem"
)

// MaxCustomerIDLength bounds customer_id, in bytes.
const MaxCustomerIDLength = 256

// MaxClientLength bounds an event's client, in bytes.
const MaxClientLength = 256

var (
	// idPattern is what a payment id, and a correlation id taken from a
	// client, may be: 1 to 128 URL- and log-safe characters.
	idPattern       = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
)

// FieldError reports one invalid field of a request body or an event; the
// API's problems list them (see [problem.Error]).
type FieldError = problem.FieldError

// ValidationError lists every invalid field of one request body or event,
// in the order of the fields. It is never empty.
type ValidationError struct {
	Fields []FieldError
}

// Error joins the field errors with "; ".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return strings.Join(parts, "; ")
}

// fieldErrors accumulates FieldErrors; its err is nil when none were added.
type fieldErrors []FieldError

func (fe *fieldErrors) add(field, detail string) {
	*fe = append(*fe, FieldError{Field: field, Detail: detail})
}

func (fe fieldErrors) err() error {
	if len(fe) == 0 {
		return nil
	}
	return &ValidationError{Fields: fe}
}

// validatePayment checks the fields every payment carries, in the order
// client, payment_id, customer_id, amount_cents, currency. The client is
// empty (anonymous) or printable UTF-8, as an API_KEYS client is.
func validatePayment(fe *fieldErrors, p Payment) {
	if p.Client != "" && (len(p.Client) > MaxClientLength || !utf8.ValidString(p.Client) ||
		strings.ContainsFunc(p.Client, unicode.IsControl)) {
		fe.add("client", "must be printable UTF-8 of at most "+strconv.Itoa(MaxClientLength)+" bytes")
	}
	if !ValidPaymentID(p.ID) {
		fe.add("payment_id", "must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'")
	}
	switch {
	case strings.TrimSpace(p.CustomerID) == "":
		fe.add("customer_id", "must not be empty")
	case len(p.CustomerID) > MaxCustomerIDLength || !utf8.ValidString(p.CustomerID):
		fe.add("customer_id", "must be valid UTF-8 of at most "+strconv.Itoa(MaxCustomerIDLength)+" bytes")
	}
	if p.AmountCents <= 0 {
		fe.add("amount_cents", "must be a positive integer")
	}
	if !currencyPattern.MatchString(p.Currency) {
		fe.add("currency", "must be three upper-case letters (ISO 4217), such as EUR")
	}
}

// ValidPaymentID reports whether id is a well-formed payment id: 1 to 128
// characters of [A-Za-z0-9._:-].
func ValidPaymentID(id string) bool { return idPattern.MatchString(id) }

// jsonFieldError turns a decoding error that concerns one field (a value of
// the wrong type) into a FieldError; ok is false for other errors.
func jsonFieldError(err error) (FieldError, bool) {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		detail := "must be a JSON " + typeErr.Type.Kind().String()
		if typeErr.Field == "amount_cents" {
			detail = "must be a positive integer"
		}
		return FieldError{Field: typeErr.Field, Detail: detail}, true
	}
	return FieldError{}, false
}
