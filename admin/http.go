package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/problem"
)

// ActorHeader names the person or tool behind an admin request. The admin
// API key is one secret for every operator, so it says only that the caller
// may act; this header says who did, for the log. It is required.
const ActorHeader = "X-Admin-Actor"

var errNoRoute = problem.New(problem.NotFound,
	"no such admin route: use GET /admin/keys/{handler}?key=..., or POST /admin/keys/{handler}/release or /evict")

// maxActor bounds the actor's length, in bytes.
const maxActor = 128

// MinAPIKeyLen is the shortest admin API key [Service.Handler] takes, in
// bytes: a key an operator could guess, or try every value of, would
// open every client's records.
const MinAPIKeyLen = 16

// Routes of the admin API. The record is named by the query: key, and for
// handler http also route and client (see [Target]); release takes
// force=true.
const (
	RouteGet     = "GET /admin/keys/{handler}"
	RouteRelease = "POST /admin/keys/{handler}/release"
	RouteEvict   = "POST /admin/keys/{handler}/evict"
)

// Handler serves the admin API behind apiKey, of at least [MinAPIKeyLen]
// bytes: every request needs "Authorization: Bearer <apiKey>" (compared
// in constant time; 401 otherwise) and an [ActorHeader] (400 otherwise).
// Answers are JSON: the [Record] read, or removed; errors are problem+json.
// Every request is logged at info (warn when refused) with its actor,
// remote address, target and outcome; never the API key. A request
// refused for its API key is logged at warn with its remote address and
// counted (Config.OnAuthFailure).
func (s *Service) Handler(apiKey string) (http.Handler, error) {
	if len(apiKey) < MinAPIKeyLen {
		return nil, fmt.Errorf("admin: the API key must be at least %d bytes long", MinAPIKeyLen)
	}
	keys, err := apikey.NewKeys(map[string]string{apiKey: "admin"})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(RouteGet, s.action("get", s.get))
	mux.Handle(RouteRelease, s.action("release", s.release))
	mux.Handle(RouteEvict, s.action("evict", s.evict))
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, _ *http.Request) {
		problem.Write(w, errNoRoute)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused := func(w http.ResponseWriter, err error) {
			s.authFailed(r, err)
			problem.Write(w, err)
		}
		apikey.Authenticate(keys, refused)(mux).ServeHTTP(w, r)
	}), nil
}

// authFailed logs and counts r, refused for its API key with err.
func (s *Service) authFailed(r *http.Request, err error) {
	actor, _ := actorOf(r.Header) // "" unless well-formed: the caller is unknown
	s.cfg.Logger.WarnContext(r.Context(), "admin authentication refused",
		"method", r.Method, "remote_addr", r.RemoteAddr, "actor", actor, "err", err)
	if s.cfg.OnAuthFailure != nil {
		s.cfg.OnAuthFailure()
	}
}

func (s *Service) get(r *http.Request, t Target) (Record, error) { return s.Get(r.Context(), t) }

func (s *Service) release(r *http.Request, t Target) (Record, error) {
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		var err error
		if force, err = strconv.ParseBool(v); err != nil {
			return Record{}, problem.Errorf(problem.Invalid, "force=%q is not allowed: use true or false", v)
		}
	}
	return s.Release(r.Context(), t, force)
}

func (s *Service) evict(r *http.Request, t Target) (Record, error) { return s.Evict(r.Context(), t) }

// action serves one admin action: it checks the actor, runs do on the
// request's target, logs who did what with which outcome, and answers.
func (s *Service) action(name string, do func(*http.Request, Target) (Record, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		t := Target{Handler: r.PathValue("handler"), Key: q.Get("key"), Route: q.Get("route"), Client: q.Get("client")}
		actor, err := actorOf(r.Header)
		var rec Record
		if err == nil {
			rec, err = do(r, t)
		}
		attrs := []any{"action", name, "actor", actor, "remote_addr", r.RemoteAddr,
			"handler", t.Handler, "key", t.Key, "route", t.Route, "client", t.Client}
		if name == "release" {
			attrs = append(attrs, "force", q.Get("force"))
		}
		if err != nil {
			s.cfg.Logger.WarnContext(r.Context(), "admin action refused",
				append(attrs, "status", problem.KindOf(err).Status(), "err", err)...)
			problem.Write(w, err)
			return
		}
		s.cfg.Logger.InfoContext(r.Context(), "admin action", append(attrs, "state", rec.State)...)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rec)
	})
}

// actorOf returns the one ActorHeader: printable text of 1 to maxActor
// bytes.
func actorOf(h http.Header) (string, error) {
	v := h.Values(ActorHeader)
	switch {
	case len(v) != 1 || strings.TrimSpace(v[0]) == "":
		return "", problem.New(problem.Invalid, "send one "+ActorHeader+" header naming who acts (onceflow keys sends $USER)")
	case len(v[0]) > maxActor || !utf8.ValidString(v[0]) || strings.ContainsFunc(v[0], unicode.IsControl):
		return "", problem.Errorf(problem.Invalid, "the %s header must be printable text of at most %d bytes", ActorHeader, maxActor)
	}
	return v[0], nil
}
