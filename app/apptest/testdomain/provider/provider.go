// Package provider is the test domain's provider: a tiny HTTP service that
// makes charges, which testdomain's charge route calls as it would call a
// real one, and whose count of charges is the truth the fault suite
// checks the ledger against.
//
// Its one route, POST /charges with {"ref": "...", "amount": n}, makes a
// charge and answers 201 {"id": "ch_...", "ref": ..., "amount": ...}; while
// [Provider.Refuse] is on it refuses every charge with 422 instead, which
// [Charge] returns as [ErrRefused]. It is guarded by onceflow's own
// Idempotency-Key face, so it keeps the promise an effect key relies on: a
// request that repeats a key is answered with the first one's charge and
// charges nothing. A request without a key is charged every time, the
// window an effect key closes.
//
// With a PostgreSQL pool ([Config].DB) its Idempotency-Key records and its
// charges live in that database or schema, and each charge commits in one
// transaction with its record (the receiver's transaction mode), so even
// a provider that fails mid-request charges a key once; without one both
// live in memory.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores/memory"
)

// Config configures a Provider. The zero value keeps everything in
// memory.
type Config struct {
	// DB, when set, keeps the provider's records and charges: Start
	// applies the records' migrations and the provider's there. Its
	// expired records are not swept: it is for tests, in a schema of
	// their own.
	DB *pgxpool.Pool
	// Logger receives the provider's and its receiver's warnings.
	// Default: discarded.
	Logger *slog.Logger
}

// Counts is what a provider charged.
type Counts struct {
	// Charges is the number of charges made.
	Charges int64
	// IDs is the number of distinct refs among them: Charges - IDs
	// charges are doubles.
	IDs int64
}

// Provider is a running provider. Close it when done.
type Provider struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string

	charges book
	logger  *slog.Logger
	server  *httptest.Server
	closers []func() error
	// refusing is Refuse's switch.
	refusing atomic.Bool
}

// charge is a charge made: the body of 201 Created.
type charge struct {
	ID     string `json:"id"`
	Ref    string `json:"ref"`
	Amount int64  `json:"amount"`
}

// Start starts a provider on cfg, serving on a free loopback port.
func Start(ctx context.Context, cfg Config) (_ *Provider, err error) {
	p := &Provider{logger: cfg.Logger}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close())
		}
	}()
	rc := receiver.Config{Logger: p.logger}
	if cfg.DB == nil {
		store := memory.New(memory.Config{})
		p.closers = append(p.closers, store.Close)
		rc.Store, p.charges = store, &memoryBook{refs: map[string]int64{}}
	} else {
		store, err := openPostgres(ctx, cfg.DB)
		if err != nil {
			return nil, err
		}
		// Each charge commits in one transaction with its record.
		rc.Transactor = exactlyonce.Transactor{DB: cfg.DB, Store: store}
		p.charges = postgresBook{cfg.DB}
	}
	r, err := receiver.New(rc)
	if err != nil {
		return nil, err
	}
	face := idempotencykey.Middleware(r,
		idempotencykey.WithAnonymous(),       // one merchant: the service
		idempotencykey.WithOptionalKey(),     // no key: a charge every time
		idempotencykey.WithClientQuota(0, 0), // its one caller is trusted
		idempotencykey.WithMaxRequestBody(4<<10),
	)
	mux := http.NewServeMux()
	mux.Handle("POST /charges", p.refuse(face(http.HandlerFunc(p.charge))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the provider: %w", err)
	}
	errorLog := slog.NewLogLogger(p.logger.Handler(), slog.LevelWarn)
	p.server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux, ErrorLog: errorLog}}
	p.server.Start()
	p.URL = p.server.URL
	return p, nil
}

// charge serves POST /charges: 201 with a new charge, 400 for a body that
// is not a charge, 500 when the charge could not be recorded (the face
// releases the key: a retry charges).
func (p *Provider) charge(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Ref    string `json:"ref"`
		Amount int64  `json:"amount"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Ref == "" || len(req.Ref) > 512 || req.Amount <= 0 {
		problem.Write(w, problem.New(problem.Invalid, `a charge is {"ref": 1 to 512 bytes, "amount": a positive integer}`))
		return
	}
	c := charge{ID: "ch_" + uuid.NewString(), Ref: req.Ref, Amount: req.Amount}
	if err := p.charges.add(r.Context(), c); err != nil {
		p.logger.ErrorContext(r.Context(), "recording a charge", "ref", c.Ref, "err", err)
		problem.Write(w, problem.New(problem.Internal, "the charge could not be made"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(c)
}

// RefusedType is the problem type of the provider's refusal (see
// [Provider.Refuse]): what tells it apart from the other 422 answers, such
// as the Idempotency-Key face's for a key reused with another charge.
const RefusedType = "urn:onceflow:testdomain:provider:refused"

// Refuse switches the provider's refusal on or off. While it is on, every
// charge is refused for good, as a provider refuses a card or a suspended
// merchant: POST /charges answers 422 with the reason (problem type
// RefusedType) and charges nothing, and [Charge] returns an error matching
// [ErrRefused]. The refusal is answered in front of the Idempotency-Key
// face, as a refusal of the caller rather than of the charge, so it is not
// recorded under the request's key: once it is off, a request repeating
// the key charges (once), as if it were the first.
func (p *Provider) Refuse(on bool) { p.refusing.Store(on) }

// refuse is next while Refuse is off, else the refusal.
func (p *Provider) refuse(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.refusing.Load() {
			next.ServeHTTP(w, r)
			return
		}
		p.logger.InfoContext(r.Context(), "charge refused", "idempotency_key", r.Header.Get(idempotencykey.Header))
		d := problem.Prepare(w, problem.New(problem.Mismatch, refusedReason))
		d.Type = RefusedType
		d.Write(w)
	})
}

// refusedReason is the detail of the provider's refusal.
const refusedReason = "the provider refuses every charge: the merchant account is suspended"

// Counts returns what the provider charged so far.
func (p *Provider) Counts(ctx context.Context) (Counts, error) { return p.charges.counts(ctx) }

// Close stops serving, once the requests in flight are answered, and
// releases what Start opened; it does not close Config.DB.
func (p *Provider) Close() error {
	if p.server != nil {
		p.server.Close()
		p.server = nil
	}
	var errs []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		errs = append(errs, p.closers[i]())
	}
	p.closers = nil
	return errors.Join(errs...)
}
