package handlers

import (
	"errors"
	"net/http"
	"net/url"

	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/problem"
)

// errNoPayment answers a payment id that names none of the caller's
// payments: the same answer whether or not another client has one.
var errNoPayment = problem.New(problem.NotFound, "no payment has this id")

// client is who sends r: the identity authentication put in its context
// ([apikey.ClientFromContext]), "" for the anonymous client. A
// payment belongs to the client that created it, and its id is that
// client's own: another client's request for the same id reads, creates
// or counts only its own payment, so it can neither see the first one
// nor learn that it exists.
func client(r *http.Request) string {
	c, _ := apikey.ClientFromContext(r.Context())
	return c
}

// acceptedResponse is the body of 202 Accepted.
type acceptedResponse struct {
	PaymentID string `json:"payment_id"`
	Status    Status `json:"status"`
}

// CreatePayment serves [RouteCreatePayment]. It validates the body, records
// the payment in the [Ledger] as the caller's and publishes
// [PaymentRequested], with the caller as its client, on
// [TopicPaymentRequested], then answers 202 Accepted with
// {"payment_id", "status": "accepted"} and a Location.
//
// Payment ids are per client: an id another client uses is a fresh id for
// this one, answered as any fresh id is (not 409, which would tell that
// the other payment exists).
//
// Errors are problem details, written by [problem.Write]: 400 naming the
// invalid fields, 409 when the caller already used the payment id for a
// payment with other details, 413 for a body over [MaxRequestBody], 415
// for a Content-Type other than JSON, 500 when the ledger fails and 503
// with Retry-After when publishing fails. Sending the same payment again is safe: it is published
// again, and the idempotent receiver charges it once.
func (h *HTTP) CreatePayment(w http.ResponseWriter, r *http.Request) {
	p, err := decodePayment(w, r)
	if err != nil {
		problem.Write(w, err)
		return
	}
	p.Client = client(r)
	ctx := r.Context()
	acceptedAt, err := h.ledger.RecordPayment(ctx, p)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			problem.Write(w, problem.New(problem.Conflict, "payment_id "+p.ID+" is already used by a payment with other details",
				FieldError{Field: "payment_id", Detail: "is already used by a payment with other details"}))
			return
		}
		h.logger.ErrorContext(ctx, "recording payment", "payment_id", p.ID, "err", err)
		problem.Write(w, problem.New(problem.Internal, "the payment could not be recorded"))
		return
	}
	msg, err := PaymentRequested{
		Client:      p.Client,
		PaymentID:   p.ID,
		CustomerID:  p.CustomerID,
		AmountCents: p.AmountCents,
		Currency:    p.Currency,
		RequestedAt: acceptedAt, // not now: a re-sent payment must yield the same payload

	}.Message()
	if err != nil {
		h.logger.ErrorContext(ctx, "encoding payment request", "payment_id", p.ID, "err", err)
		problem.Write(w, problem.New(problem.Internal, "the payment could not be encoded"))
		return
	}
	correlationID := r.Header.Get(CorrelationIDHeader)
	if !idPattern.MatchString(correlationID) {
		correlationID = uuid.NewString()
	}
	wmmw.SetCorrelationID(correlationID, msg)
	// The request's context travels with the message: a publisher that
	// writes in the request's transaction (an outbox) finds it there.
	msg.SetContext(ctx)
	w.Header().Set(CorrelationIDHeader, correlationID)
	if err := h.publisher.Publish(TopicPaymentRequested, msg); err != nil {
		h.logger.ErrorContext(ctx, "publishing payment request", "payment_id", p.ID, "err", err)
		problem.Write(w, problem.New(problem.Unavailable, "the payment could not be queued; retry the request"))
		return
	}
	h.logger.InfoContext(ctx, "payment accepted",
		"payment_id", p.ID, "message_uuid", msg.UUID, "correlation_id", correlationID)
	w.Header().Set("Location", "/v1/payments/"+url.PathEscape(p.ID))
	writeJSON(w, http.StatusAccepted, acceptedResponse{PaymentID: p.ID, Status: StatusAccepted})
}

// GetPayment serves [RouteGetPayment]: 200 with the state of the caller's
// payment as {"payment_id", "status", "charges", "notifications",
// "receipts"}, 404 when the caller has no payment of the id (whether or
// not another client has one), 500 when the ledger fails.
func (h *HTTP) GetPayment(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !ValidPaymentID(id) {
		problem.Write(w, errNoPayment)
		return
	}
	state, err := h.ledger.Payment(r.Context(), client(r), id)
	switch {
	case errors.Is(err, ErrNotFound):
		problem.Write(w, errNoPayment)
	case err != nil:
		h.logger.ErrorContext(r.Context(), "reading payment", "payment_id", id, "err", err)
		problem.Write(w, problem.New(problem.Internal, "the payment could not be read"))
	default:
		writeJSON(w, http.StatusOK, state)
	}
}

// LedgerSummary serves [RouteLedgerSummary]: 200 with the [Summary] of the
// caller's payments as {"payments", "charges", "notifications",
// "receipts"}, 500 when the ledger fails. Other clients' payments are
// counted in theirs only.
func (h *HTTP) LedgerSummary(w http.ResponseWriter, r *http.Request) {
	s, err := h.ledger.Summary(r.Context(), client(r))
	if err != nil {
		h.logger.ErrorContext(r.Context(), "summarising ledger", "err", err)
		problem.Write(w, problem.New(problem.Internal, "the ledger could not be read"))
		return
	}
	writeJSON(w, http.StatusOK, s)
}
