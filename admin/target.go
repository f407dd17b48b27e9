package admin

import (
	"slices"
	"strings"

	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/problem"
)

// Target names one record as the receiver derives it.
type Target struct {
	// Handler is a message handler's route name, or [idempotencykey.Scope]
	// ("http") for the Idempotency-Key records of the HTTP face.
	Handler string `json:"handler"`
	// Key is the message's idempotency key (metadata idempotency_key, else
	// its UUID), or the request's Idempotency-Key, quoted or bare.
	Key string `json:"key"`
	// Route is, for handler "http", the route pattern, such as
	// "POST /v1/charges"; it may be left empty when the service has one
	// such route.
	Route string `json:"route,omitempty"`
	// Client is, for handler "http", the client the request came from (its
	// API_KEYS identity); empty when API_KEYS is unset (every caller is
	// the anonymous client).
	Client string `json:"client,omitempty"`
}

// recordKey checks t against the service's handlers, routes and clients
// and returns its record key and t with the route filled in and the
// Idempotency-Key unquoted. Its errors are [*problem.Error]s of kind
// [problem.Invalid].
func (s *Service) recordKey(t Target) (string, Target, error) {
	if t.Handler != idempotencykey.Scope {
		switch {
		case !slices.Contains(s.cfg.Handlers, t.Handler):
			return "", t, problem.Errorf(problem.Invalid, "unknown handler %q: use one of %s", t.Handler,
				strings.Join(append(slices.Clone(s.cfg.Handlers), idempotencykey.Scope), ", "))
		case t.Key == "":
			return "", t, problem.New(problem.Invalid, "the key is empty: name the idempotency key of the message")
		case t.Route != "" || t.Client != "":
			return "", t, problem.Errorf(problem.Invalid, "route and client apply to handler %q only", idempotencykey.Scope)
		}
		return receiver.RecordKey(t.Handler, t.Key), t, nil
	}
	if t.Route == "" && len(s.cfg.HTTPRoutes) == 1 {
		t.Route = s.cfg.HTTPRoutes[0]
	}
	if !slices.Contains(s.cfg.HTTPRoutes, t.Route) {
		return "", t, problem.Errorf(problem.Invalid, "unknown route %q: use one of %q", t.Route, s.cfg.HTTPRoutes)
	}
	if err := s.checkClient(t.Client); err != nil {
		return "", t, err
	}
	key, err := idempotencykey.Parse(t.Key)
	if err != nil {
		return "", t, err
	}
	t.Key = key
	method, _, _ := strings.Cut(t.Route, " ")
	return receiver.RecordKey(idempotencykey.Scope, idempotencykey.RequestKey(t.Client, method, t.Route, key)), t, nil
}

// checkClient accepts a known client, or the anonymous client ("") when
// the service has no API keys.
func (s *Service) checkClient(client string) error {
	switch {
	case s.cfg.Clients == nil && client != "":
		return problem.Errorf(problem.Invalid, "unknown client %q: API_KEYS is unset, so every request came from the anonymous client: leave client empty", client)
	case s.cfg.Clients != nil && client == "":
		return problem.New(problem.Invalid, "the client is empty: name the API_KEYS client the request came from")
	case s.cfg.Clients != nil && !slices.Contains(s.cfg.Clients, client):
		return problem.Errorf(problem.Invalid, "unknown client %q: not a client of API_KEYS", client)
	}
	return nil
}
