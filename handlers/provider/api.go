package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/problem"
)

// Bounds of a charge request, in bytes.
const (
	MaxRequestBody = 4 << 10
	MaxFieldLength = 512
)

// ChargeRequest is the body of POST /charges: who pays how much, for
// which payment of the caller's.
type ChargeRequest struct {
	// PaymentID is the caller's reference of the payment, 1 to
	// MaxFieldLength bytes. The provider does not deduplicate by it:
	// only the Idempotency-Key does.
	PaymentID string `json:"payment_id"`
	// CustomerID is who pays, 1 to MaxFieldLength bytes.
	CustomerID  string `json:"customer_id"`
	AmountCents int64  `json:"amount_cents"`
	// Currency is an ISO 4217 code in upper case, such as EUR.
	Currency string `json:"currency"`
}

// Charge is a charge the provider made: the body of 201 Created.
type Charge struct {
	// ID is the provider's id of the charge, ch_ and a UUID.
	ID string `json:"id"`
	ChargeRequest
	CreatedAt time.Time `json:"created_at"`
	// Replayed is true when the provider answered with the charge of an
	// earlier request of the same Idempotency-Key (Idempotent-Replayed:
	// true) and charged nothing; [Client] sets it, from the header.
	Replayed bool `json:"-"`
}

// countResponse is the body of GET /charges/count.
type countResponse struct {
	Charges int64 `json:"charges"`
}

// routes is the provider's API, RouteCharge's handler behind idempotent.
func (p *Provider) routes(idempotent func(http.Handler) http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(RouteCharge, idempotent(http.HandlerFunc(p.charge)))
	mux.HandleFunc(RouteChargeCount, p.countCharges)
	mux.HandleFunc(RouteReady, p.readyz)
	return mux
}

// charge serves RouteCharge: it validates the request, records a new
// charge and answers 201 with it; 400 naming the invalid fields, or 500
// when the charge could not be recorded (the face releases the key, so a
// retry charges).
func (p *Provider) charge(w http.ResponseWriter, r *http.Request) {
	req, err := decodeCharge(r.Body)
	if err != nil {
		problem.Write(w, err)
		return
	}
	c := Charge{
		ID:            "ch_" + uuid.NewString(),
		ChargeRequest: req,
		// What PostgreSQL keeps, so that a replay reads the same.
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	ctx := r.Context()
	if err := p.book.add(ctx, c); err != nil {
		p.logger.ErrorContext(ctx, "recording a charge", "payment_id", req.PaymentID, "err", err)
		problem.Write(w, problem.New(problem.Internal, "the charge could not be made"))
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

// countCharges serves RouteChargeCount.
func (p *Provider) countCharges(w http.ResponseWriter, r *http.Request) {
	n, err := p.book.count(r.Context(), r.URL.Query().Get("payment_id"))
	if err != nil {
		p.logger.ErrorContext(r.Context(), "counting charges", "err", err)
		problem.Write(w, problem.New(problem.Internal, "the charges could not be counted"))
		return
	}
	writeJSON(w, http.StatusOK, countResponse{Charges: n})
}

// readyz serves RouteReady.
func (p *Provider) readyz(w http.ResponseWriter, r *http.Request) {
	if err := p.ready(r.Context()); err != nil {
		problem.Write(w, problem.New(problem.Unavailable, "the provider's database is unavailable"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// decodeCharge reads and validates a ChargeRequest: one JSON object
// without unknown fields. Its errors are [*problem.Error]s of kind
// Invalid. The face has bounded the body.
func decodeCharge(body io.Reader) (ChargeRequest, error) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var req ChargeRequest
	if err := dec.Decode(&req); err != nil {
		return ChargeRequest{}, problem.New(problem.Invalid, "the body is not a charge: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ChargeRequest{}, problem.New(problem.Invalid, "the body must hold one JSON object and nothing after it")
	}
	var fields []problem.FieldError
	for _, f := range []struct{ name, value string }{{"payment_id", req.PaymentID}, {"customer_id", req.CustomerID}} {
		if n := len(f.value); n == 0 || n > MaxFieldLength {
			fields = append(fields, problem.FieldError{Field: f.name, Detail: fmt.Sprintf("must be 1 to %d bytes", MaxFieldLength)})
		}
	}
	if req.AmountCents <= 0 {
		fields = append(fields, problem.FieldError{Field: "amount_cents", Detail: "must be positive"})
	}
	if !currency.MatchString(req.Currency) {
		fields = append(fields, problem.FieldError{Field: "currency", Detail: "must be an ISO 4217 code such as EUR"})
	}
	if len(fields) > 0 {
		return ChargeRequest{}, problem.New(problem.Invalid, "the charge has invalid fields", fields...)
	}
	return req, nil
}
