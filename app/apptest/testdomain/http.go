package testdomain

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/problem"
)

// Routes of the domain's HTTP API (net/http ServeMux patterns).
const (
	// CreatePattern accepts a request, behind the Idempotency-Key face.
	CreatePattern = "POST /v1/charges"
	// ReadPattern answers the [Tally] of one of the caller's requests.
	ReadPattern = "GET /v1/charges/{id}"
	// SummaryPattern answers the [Tally] of the whole ledger, every
	// client's.
	SummaryPattern = "GET /v1/summary"
)

// CorrelationHeader is the request header whose value, when it is a well
// formed id, becomes the correlation id of the request's event; otherwise
// a new one is made. The response echoes it.
const CorrelationHeader = "X-Correlation-ID"

// MaxRequestBody bounds the body of CreatePattern, in bytes.
const MaxRequestBody = 4 << 10

// Publisher publishes messages; a [message.Publisher] is one.
type Publisher interface {
	Publish(topic string, messages ...*message.Message) error
}

// API is the domain's HTTP API on ledger, publishing through pub, logging
// to logger (nil discards): what the domain hands the service, and what
// a bench serves on its own, Register's idempotent the face or a
// function that returns its handler.
//
// POST /v1/charges takes {"id": ..., "amount": ...}: it adds a [Requests]
// row for the caller's [Event] (its client from
// [apikey.ClientFromContext]) and publishes the event on
// TopicRequested, then answers 202 {"id": ...} with a Location. Its
// problems (application/problem+json): 400 naming what is wrong with the
// body, 500 when the ledger fails, 503 with Retry-After when publishing
// does. Sending a request again is safe: the receiver charges it once.
func API(ledger Ledger, pub Publisher, logger *slog.Logger) domain.HTTP {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := api{ledger: ledger, pub: pub, logger: logger}
	return domain.HTTP{
		Register: func(mux *http.ServeMux, idempotent func(http.Handler) http.Handler) {
			mux.Handle(CreatePattern, idempotent(http.HandlerFunc(a.create)))
			mux.HandleFunc(ReadPattern, a.read)
			mux.HandleFunc(SummaryPattern, a.summary)
		},
		IdempotentRoutes: []string{CreatePattern},
		MaxRequestBody:   MaxRequestBody,
		ReplayedHeaders:  []string{CorrelationHeader},
	}
}

type api struct {
	ledger Ledger
	pub    Publisher
	logger *slog.Logger
}

func (a api) create(w http.ResponseWriter, r *http.Request) {
	e, err := decodeRequest(r.Body)
	if err != nil {
		problem.Write(w, err)
		return
	}
	e.Client, _ = apikey.ClientFromContext(r.Context())
	ctx := r.Context()
	if err := a.ledger.Add(ctx, Requests, e.Key()); err != nil {
		a.logger.ErrorContext(ctx, "recording a request", "id", e.Key(), "err", err)
		problem.Write(w, problem.New(problem.Internal, "the request could not be recorded"))
		return
	}
	msg := e.Message()
	correlation := r.Header.Get(CorrelationHeader)
	if !idPattern.MatchString(correlation) {
		correlation = watermill.NewUUID()
	}
	wmmw.SetCorrelationID(correlation, msg)
	msg.SetContext(ctx) // where an outbox finds the request's transaction
	w.Header().Set(CorrelationHeader, correlation)
	if err := a.pub.Publish(TopicRequested, msg); err != nil {
		a.logger.ErrorContext(ctx, "publishing a request", "id", e.Key(), "err", err)
		problem.Write(w, problem.New(problem.Unavailable, "the request could not be queued: retry it"))
		return
	}
	a.logger.InfoContext(ctx, "request accepted", "id", e.Key(), "message_uuid", msg.UUID, "correlation_id", correlation)
	w.Header().Set("Location", "/v1/charges/"+e.ID) // an id is URL-safe
	writeJSON(w, http.StatusAccepted, map[string]string{"id": e.ID})
}

// decodeRequest reads the body of CreatePattern: one JSON object with an
// id and an amount, nothing else. Its errors are [*problem.Error]s.
func decodeRequest(body io.Reader) (Event, error) {
	var req struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if f, ok := typeError(err); ok {
			return Event{}, problem.New(problem.Invalid, "the request has invalid fields", f)
		}
		return Event{}, problem.New(problem.Invalid, "the body is not a request: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Event{}, problem.New(problem.Invalid, "the body must hold one JSON object and nothing after it")
	}
	e := Event{ID: req.ID, Amount: req.Amount}
	if fields := e.invalid(); len(fields) > 0 {
		return Event{}, problem.New(problem.Invalid, "the request has invalid fields", fields...)
	}
	return e, nil
}

// read answers the Tally of the caller's request id: 200, or 404 when the
// ledger has no row of it.
func (a api) read(w http.ResponseWriter, r *http.Request) {
	client, _ := apikey.ClientFromContext(r.Context())
	t, err := a.ledger.TallyOf(r.Context(), Event{Client: client, ID: r.PathValue("id")}.Key())
	switch {
	case err != nil:
		a.fail(w, r, err)
	case t == Tally{}:
		problem.Write(w, problem.New(problem.NotFound, "no request has this id"))
	default:
		writeJSON(w, http.StatusOK, t)
	}
}

// summary answers the Tally of the whole ledger.
func (a api) summary(w http.ResponseWriter, r *http.Request) {
	t, err := a.ledger.Tally(r.Context(), "")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// fail answers a ledger that could not be read.
func (a api) fail(w http.ResponseWriter, r *http.Request, err error) {
	a.logger.ErrorContext(r.Context(), "reading the ledger", "err", err)
	problem.Write(w, problem.New(problem.Internal, "the ledger could not be read"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
