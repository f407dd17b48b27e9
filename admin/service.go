package admin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/problem"
	"github.com/onceflow/onceflow/stores"
)

// Config configures a Service.
type Config struct {
	// Store holds the records: the receiver's store, or the cache in front
	// of it (whose Remove drops this process's copy too). Required.
	Store stores.Admin
	// Handlers are the message handlers' route names (domain.Routes).
	Handlers []string
	// HTTPRoutes are the route patterns behind the HTTP face, such as
	// "POST /v1/charges".
	HTTPRoutes []string
	// Clients are the API_KEYS clients; nil when API_KEYS is unset, and
	// every request comes from the anonymous client.
	Clients []string
	// Logger receives one line per action, naming the operator whose key
	// made it, and a line on a source's refused authentications at most
	// once a minute (see [Service.Handler]). Nil discards.
	Logger *slog.Logger
	// OnAuthFailure, when set, is called once for every request refused
	// for a missing or wrong API key: the service counts them.
	OnAuthFailure func()
	// OnThrottled, when set, is called once for every request refused
	// because its source has failed too often (see [Throttle]).
	OnThrottled func()
	// Throttle bounds failed authentications per source; its zero value
	// is the default.
	Throttle Throttle
	// Poison, when set, is the poison console served under /admin/poison
	// (see [RoutePoisonList]) and on the operator page.
	Poison *poison.Console
	// Outcomes, when set, returns the receiver's outcome counts by handler
	// and outcome since the service started: the operator page shows them
	// over its last minutes.
	Outcomes func() Counts
}

// Service reads and removes records for operators. It is safe for
// concurrent use.
type Service struct {
	cfg      Config
	throttle *throttle
	window   outcomeWindow
}

// New returns the Service of cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("admin: missing store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, throttle: newThrottle(cfg.Throttle)}
	if cfg.Outcomes != nil {
		s.window.over(time.Now(), 0, cfg.Outcomes()) // the page's first window starts here
	}
	return s, nil
}

// Record is a record as an operator sees it.
type Record struct {
	Target
	// State is "in_progress" or "completed".
	State       string     `json:"state"`
	CreatedAt   time.Time  `json:"created_at"`
	LeaseUntil  *time.Time `json:"lease_until,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	// Fingerprint is the hex digest of the payload (or request) that
	// claimed the key.
	Fingerprint string `json:"fingerprint"`
	// ResultBytes is the size of the stored result.
	ResultBytes int `json:"result_bytes"`
}

func newRecord(t Target, e stores.Entry) Record {
	r := Record{Target: t, State: e.Status.String(), CreatedAt: e.Record.CreatedAt,
		Fingerprint: hex.EncodeToString(e.Record.Fingerprint), ResultBytes: len(e.Record.Result)}
	if e.Status == stores.InProgress {
		r.LeaseUntil = &e.LeaseUntil
	} else {
		r.CompletedAt, r.ExpiresAt = &e.Record.CompletedAt, &e.Record.ExpiresAt
	}
	return r
}

// Errors of the actions, each a [*problem.Error].
var (
	errNotFound = problem.New(problem.NotFound,
		"no live record for this key: none was made, or its lease or TTL has ended (the next copy runs the handler)")
	errChanged = problem.New(problem.Conflict, "the record changed while it was being removed: get it again")
	errBusy    = problem.New(problem.Unavailable, "the idempotency store is unavailable: retry")
)

// Get returns the live record t names.
func (s *Service) Get(ctx context.Context, t Target) (Record, error) {
	_, t, e, err := s.lookup(ctx, t)
	if err != nil {
		return Record{}, err
	}
	return newRecord(t, e), nil
}

// Release removes the in-progress record t names. Its owner holds a live
// lease, so without force it is refused with a conflict that says when
// the lease ends. A completed record is refused too: evict it.
func (s *Service) Release(ctx context.Context, t Target, force bool) (Record, error) {
	k, t, e, err := s.lookup(ctx, t)
	if err != nil {
		return Record{}, err
	}
	switch {
	case e.Status == stores.Completed:
		return Record{}, problem.New(problem.Conflict, "the key is completed, not in progress: evict it to have it processed again")
	case !force:
		return Record{}, problem.Errorf(problem.Conflict,
			"the key is held by its owner until %s (store clock), when it frees itself: release it with force to free it now, knowing that the owner may still be running",
			e.LeaseUntil.UTC().Format(time.RFC3339Nano))
	}
	return newRecord(t, e), s.remove(ctx, k, e)
}

// Evict removes the completed record t names, so that the next copy runs
// the handler again. An in-progress record is refused: release it.
func (s *Service) Evict(ctx context.Context, t Target) (Record, error) {
	k, t, e, err := s.lookup(ctx, t)
	if err != nil {
		return Record{}, err
	}
	if e.Status != stores.Completed {
		return Record{}, problem.New(problem.Conflict, "the key is in progress, not completed: release it instead")
	}
	return newRecord(t, e), s.remove(ctx, k, e)
}

// lookup resolves t and reads its record.
func (s *Service) lookup(ctx context.Context, t Target) (string, Target, stores.Entry, error) {
	k, t, err := s.recordKey(t)
	if err != nil {
		return "", t, stores.Entry{}, err
	}
	e, err := s.cfg.Store.Lookup(ctx, k)
	return k, t, e, s.storeError(err)
}

// remove deletes the record e read under k, if it is still that record.
func (s *Service) remove(ctx context.Context, k string, e stores.Entry) error {
	err := s.cfg.Store.Remove(ctx, k, e)
	if errors.Is(err, stores.ErrNotFound) {
		return errChanged
	}
	return s.storeError(err)
}

// storeError translates a store's error into the problem answered.
func (s *Service) storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, stores.ErrNotFound):
		return errNotFound
	case errors.Is(err, stores.ErrUnavailable):
		return fmt.Errorf("%w: %w", errBusy, err)
	}
	return err
}
