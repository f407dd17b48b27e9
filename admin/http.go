package admin

import (
	"encoding/json"
	"net/http"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/problem"
)

var errNoRoute = problem.New(problem.NotFound,
	"no such admin route: use GET /admin/keys/{handler}?key=..., POST /admin/keys/{handler}/release or /evict, "+
		"or, with the poison console, GET /admin/poison")

// MinAPIKeyLen is the shortest operator key [Service.Handler] takes, in
// bytes: a key an operator could guess, or try every value of, would
// open every client's records. Handler holds keys to [apikey.CheckKey],
// which asks for this length and enough different characters.
const MinAPIKeyLen = apikey.MinKeyLen

// Routes of the admin API. The record is named by the query: key, and for
// handler http also route and client (see [Target]); release takes
// force=true.
const (
	RouteGet     = "GET /admin/keys/{handler}"
	RouteRelease = "POST /admin/keys/{handler}/release"
	RouteEvict   = "POST /admin/keys/{handler}/evict"
)

// Handler serves the admin API, and the operator page at [PageRoot], to
// the operators of keys, a map from each
// operator's key to their name: one key per operator, each passing
// [apikey.CheckKey] (of at least [MinAPIKeyLen] bytes). Every request
// needs "Authorization: Bearer <key>" (compared in constant time; 401
// otherwise), and failed attempts are throttled per source (Config.Throttle;
// 429 with Retry-After). Answers are JSON: the [Record] read, or removed;
// errors are problem+json. Every action is logged at info (warn when
// refused) with its actor, the operator whose key it carried, its remote
// address, target and outcome; refused authentications at warn, once a
// minute per source at most, with their count; never a key.
func (s *Service) Handler(keys map[string]string) (http.Handler, error) {
	operators, err := operatorKeys(keys)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(RouteGet, s.action("get", s.get))
	mux.Handle(RouteRelease, s.action("release", s.release))
	mux.Handle(RouteEvict, s.action("evict", s.evict))
	if s.cfg.Poison != nil {
		s.poisonRoutes(mux)
	}
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, _ *http.Request) {
		problem.Write(w, errNoRoute)
	})
	root := http.NewServeMux()
	s.pageRoutes(root, operators)
	root.Handle("/admin/", s.authenticate(operators, mux))
	return root, nil
}

func (s *Service) get(r *http.Request, t Target) (Record, error) { return s.Get(r.Context(), t) }

func (s *Service) release(r *http.Request, t Target) (Record, error) {
	force, err := boolParam(r.URL.Query(), "force")
	if err != nil {
		return Record{}, err
	}
	return s.Release(r.Context(), t, force)
}

func (s *Service) evict(r *http.Request, t Target) (Record, error) { return s.Evict(r.Context(), t) }

// action serves one admin action, on an authenticated request: it runs do
// on the request's target, logs who did what with which outcome, and
// answers. Who is the operator whose key the request carried; nothing the
// request says of itself names them.
func (s *Service) action(name string, do func(*http.Request, Target) (Record, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		t := Target{Handler: r.PathValue("handler"), Key: q.Get("key"), Route: q.Get("route"), Client: q.Get("client")}
		rec, err := do(r, t)
		s.audit(r, name, t, q.Get("force"), rec, err)
		if err != nil {
			problem.Write(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rec)
	})
}

// audit logs a key admin action on t, as the operator r authenticated,
// with its outcome: at info with the record's state, at warn when
// refused. force is release's.
func (s *Service) audit(r *http.Request, name string, t Target, force string, rec Record, err error) {
	actor, _ := apikey.ClientFromContext(r.Context())
	attrs := []any{"action", name, "actor", actor, "remote_addr", r.RemoteAddr,
		"handler", t.Handler, "key", t.Key, "route", t.Route, "client", t.Client}
	if name == "release" {
		attrs = append(attrs, "force", force)
	}
	if err != nil {
		s.cfg.Logger.WarnContext(r.Context(), "admin action refused",
			append(attrs, "status", problem.KindOf(err).Status(), "err", err)...)
		return
	}
	s.cfg.Logger.InfoContext(r.Context(), "admin action", append(attrs, "state", rec.State)...)
}
