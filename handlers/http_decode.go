package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/onceflow/onceflow/problem"
)

// MaxRequestBody bounds the body of POST /v1/payments, in bytes.
const MaxRequestBody = 64 << 10

// paymentRequest is the body of POST /v1/payments.
type paymentRequest struct {
	PaymentID   string `json:"payment_id"`
	CustomerID  string `json:"customer_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// decodePayment reads and validates the body of POST /v1/payments: one JSON
// object of at most [MaxRequestBody] bytes, without unknown fields. Its
// errors are [*problem.Error]s: the request must change.
func decodePayment(w http.ResponseWriter, r *http.Request) (Payment, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return Payment{}, problem.Errorf(problem.UnsupportedMediaType,
				"Content-Type %q is not supported: send application/json", ct)
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	dec.DisallowUnknownFields()
	var req paymentRequest
	if err := dec.Decode(&req); err != nil {
		return Payment{}, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return Payment{}, decodeError(err)
		}
		return Payment{}, invalid("the body must hold one JSON object and nothing after it")
	}
	p := Payment{ID: req.PaymentID, CustomerID: req.CustomerID, AmountCents: req.AmountCents, Currency: req.Currency}
	var fe fieldErrors
	validatePayment(&fe, p)
	if len(fe) > 0 {
		return Payment{}, invalid("the payment has invalid fields", fe...)
	}
	return p, nil
}

// decodeError turns a JSON decoding error into a [*problem.Error].
func decodeError(err error) *problem.Error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return problem.Errorf(problem.TooLarge, "the body must be at most %d bytes", tooLarge.Limit)
	}
	if f, ok := jsonFieldError(err); ok {
		return invalid("the payment has invalid fields", f)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f := FieldError{Field: strings.Trim(name, `"`), Detail: "is not a known field"}
		return invalid("the payment has unknown fields", f)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.Is(err, io.EOF) || errors.As(err, &typeErr) {
		return invalid("the body must be a JSON object")
	}
	return invalid("the body is not valid JSON: " + err.Error())
}

// invalid is a 400: the body is malformed or has invalid fields.
func invalid(detail string, fields ...FieldError) *problem.Error {
	return problem.New(problem.Invalid, detail, fields...)
}
