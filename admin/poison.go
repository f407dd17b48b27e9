package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/problem"
)

// Routes of the poison console (Config.Poison). The list and the batch
// actions take the filter in the query (see [ParseFilter]); redrive takes
// force=true, the batches dry_run=true.
const (
	RoutePoisonList       = "GET /admin/poison"
	RoutePoisonSummary    = "GET /admin/poison/summary"
	RoutePoisonGet        = "GET /admin/poison/{id}"
	RoutePoisonRedrive    = "POST /admin/poison/{id}/redrive"
	RoutePoisonDiscard    = "POST /admin/poison/{id}/discard"
	RoutePoisonRedriveAll = "POST /admin/poison/redrive"
	RoutePoisonDiscardAll = "POST /admin/poison/discard"
)

// Page is a page of parked messages, as RoutePoisonList answers it: Next
// is the cursor (query after) of the next page, empty on the last.
type Page struct {
	Messages []poison.Message `json:"messages"`
	Next     string           `json:"next,omitempty"`
}

// Summary is RoutePoisonSummary's answer.
type Summary struct {
	Groups []poison.Group `json:"groups"`
}

// poisonRoutes adds the poison console's routes to mux.
func (s *Service) poisonRoutes(mux *http.ServeMux) {
	c := s.cfg.Poison
	mux.Handle(RoutePoisonList, s.poisonAction("list", func(r *http.Request, _ string) (any, error) {
		f, err := ParseFilter(r.URL.Query())
		if err != nil {
			return nil, err
		}
		ms, next, err := c.Store.List(r.Context(), f)
		if ms == nil {
			ms = []poison.Message{}
		}
		return Page{Messages: ms, Next: next}, err
	}))
	mux.Handle(RoutePoisonSummary, s.poisonAction("summary", func(r *http.Request, _ string) (any, error) {
		gs, err := c.Store.Summary(r.Context())
		if gs == nil {
			gs = []poison.Group{}
		}
		return Summary{Groups: gs}, err
	}))
	mux.Handle(RoutePoisonGet, s.poisonAction("show", func(r *http.Request, _ string) (any, error) {
		return c.Store.Get(r.Context(), r.PathValue("id"))
	}))
	mux.Handle(RoutePoisonRedrive, s.poisonAction("redrive", func(r *http.Request, actor string) (any, error) {
		force, err := boolParam(r.URL.Query(), "force")
		if err != nil {
			return nil, err
		}
		return c.Redrive(r.Context(), r.PathValue("id"), actor, force)
	}))
	mux.Handle(RoutePoisonDiscard, s.poisonAction("discard", func(r *http.Request, actor string) (any, error) {
		return c.Discard(r.Context(), r.PathValue("id"), actor)
	}))
	mux.Handle(RoutePoisonRedriveAll, s.poisonAction("redrive_all", func(r *http.Request, actor string) (any, error) {
		q := r.URL.Query()
		f, err := ParseFilter(q)
		if err != nil {
			return nil, err
		}
		force, err := boolParam(q, "force")
		if err != nil {
			return nil, err
		}
		dry, err := boolParam(q, "dry_run")
		if err != nil {
			return nil, err
		}
		return c.RedriveAll(r.Context(), f, actor, force, dry)
	}))
	mux.Handle(RoutePoisonDiscardAll, s.poisonAction("discard_all", func(r *http.Request, actor string) (any, error) {
		q := r.URL.Query()
		f, err := ParseFilter(q)
		if err != nil {
			return nil, err
		}
		dry, err := boolParam(q, "dry_run")
		if err != nil {
			return nil, err
		}
		return c.DiscardAll(r.Context(), f, actor, dry)
	}))
}

// poisonAction serves one action of the poison console on an
// authenticated request, as [Service.action] does for the key admin: the
// changes (redrive, discard) are logged with their actor by the console,
// a refusal here.
func (s *Service) poisonAction(name string, do func(r *http.Request, actor string) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, _ := apikey.ClientFromContext(r.Context())
		v, err := do(r, actor)
		if err != nil {
			err = poisonError(err)
			s.cfg.Logger.WarnContext(r.Context(), "admin action refused", "action", "poison_"+name, "actor", actor,
				"remote_addr", r.RemoteAddr, "id", r.PathValue("id"), "status", problem.KindOf(err).Status(), "err", err)
			problem.Write(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
}

// poisonError is the problem answered for err.
func poisonError(err error) error {
	var p *problem.Error
	switch {
	case errors.As(err, &p):
		return err
	case errors.Is(err, poison.ErrNotFound):
		return problem.New(problem.NotFound, err.Error())
	case errors.Is(err, poison.ErrSettled), errors.Is(err, poison.ErrRefused):
		return problem.New(problem.Conflict, err.Error())
	}
	return err
}

// ParseFilter reads a [poison.Filter] from a query: handler, topic, class,
// state (parked, redriven, discarded or all), since and until (RFC 3339),
// limit and after (a page's cursor).
func ParseFilter(q url.Values) (poison.Filter, error) {
	f := poison.Filter{Handler: q.Get("handler"), Topic: q.Get("topic"), After: q.Get("after")}
	var err error
	if v := q.Get("class"); v != "" {
		if f.Class, err = poison.ParseClass(v); err != nil {
			return f, problem.New(problem.Invalid, err.Error())
		}
	}
	if v := q.Get("state"); v != "" {
		if v == string(poison.All) {
			f.State = poison.All
		} else if f.State, err = poison.ParseState(v); err != nil {
			return f, problem.New(problem.Invalid, err.Error()+", or all")
		}
	}
	for name, t := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			if *t, err = time.Parse(time.RFC3339, v); err != nil {
				return f, problem.Errorf(problem.Invalid, "%s=%q is not a time: use RFC 3339, such as 2026-03-01T12:00:00Z", name, v)
			}
		}
	}
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 || f.Limit > poison.MaxLimit {
			return f, problem.Errorf(problem.Invalid, "limit=%q is not allowed: use 1 to %d", v, poison.MaxLimit)
		}
	}
	return f, nil
}

// boolParam reads the boolean query parameter name, false when absent.
func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, problem.Errorf(problem.Invalid, "%s=%q is not allowed: use true or false", name, v)
	}
	return b, nil
}
