package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/problem"
)

// The operator page: plain HTML rendered here, with no script and no
// asset from elsewhere, at PageRoot on the admin API's address. An
// operator signs in with their own admin key, which the page keeps in a
// cookie (HttpOnly, SameSite=Strict, for /admin/ only); every form that
// changes something carries a token derived from that key, so that
// another site cannot post one. Failed sign-ins are throttled like the
// API's.
const (
	PageRoot    = "/admin/"
	pagePrefix  = "/admin/page/"
	cookieName  = "onceflow_admin"
	csrfField   = "csrf"
	pageWindow  = 5 * time.Minute
	reasonWidth = 120
)

//go:embed page.html
var pageFS embed.FS

var pageTemplates = template.Must(template.New("page").Funcs(template.FuncMap{
	"age":   age,
	"clip":  func(s string) string { return poison.Clip(s, reasonWidth) },
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"query": func(f poison.Filter) string { return FilterQuery(f).Encode() },
	"states": func() []poison.State {
		return []poison.State{poison.Parked, poison.Redriven, poison.Discarded, poison.All}
	},
}).ParseFS(pageFS, "page.html"))

// pageOutcomes are the outcome columns of the page, in order.
var pageOutcomes = []string{"processed", "duplicate", "in_progress", "failed"}

// pageRoutes adds the operator page to mux.
func (s *Service) pageRoutes(mux *http.ServeMux, keys *apikey.Keys) {
	signedIn := func(h func(http.ResponseWriter, *http.Request, string)) http.Handler {
		return s.pageAuth(keys, h)
	}
	mux.Handle("GET "+PageRoot+"{$}", signedIn(s.dashboard))
	mux.Handle("POST "+pagePrefix+"login", s.login(keys))
	mux.HandleFunc("POST "+pagePrefix+"logout", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, sessionCookie(r, ""))
		http.Redirect(w, r, PageRoot, http.StatusSeeOther)
	})
	mux.Handle("GET "+pagePrefix+"messages/{id}", signedIn(s.messagePage))
	mux.Handle("POST "+pagePrefix+"messages/{id}/{action}", signedIn(s.settleOne))
	mux.Handle("POST "+pagePrefix+"groups/{action}", signedIn(s.settleGroup))
	mux.Handle("GET "+pagePrefix+"keys", signedIn(s.keyPage))
	mux.Handle("POST "+pagePrefix+"keys/{action}", signedIn(s.keyAction))
}

// pageAuth serves h to a signed-in operator (their name given), and the
// sign-in form to anyone else.
func (s *Service) pageAuth(keys *apikey.Keys, h func(http.ResponseWriter, *http.Request, string)) http.Handler {
	authed := s.authenticateOr(keys, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, _ := apikey.ClientFromContext(r.Context())
		if r.Method == http.MethodPost && !validToken(r) {
			s.render(w, http.StatusForbidden, "error", view{Actor: actor, Error: "the form's token is not this session's: reload the page and try again"})
			return
		}
		h(w, r, actor)
	}), s.refusePage)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		if err != nil || c.Value == "" {
			if r.Method == http.MethodGet && r.URL.Path == PageRoot {
				s.render(w, http.StatusOK, "login", view{})
				return
			}
			http.Redirect(w, r, PageRoot, http.StatusSeeOther)
			return
		}
		authed.ServeHTTP(w, withKey(r, c.Value))
	})
}

// login checks the key of the sign-in form and keeps it in the cookie.
func (s *Service) login(keys *apikey.Keys) http.Handler {
	authed := s.authenticateOr(keys, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, sessionCookie(r, sessionKey(r)))
		http.Redirect(w, r, PageRoot, http.StatusSeeOther)
	}), s.refusePage)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authed.ServeHTTP(w, withKey(r, r.PostFormValue("key")))
	})
}

// refusePage answers a refused sign-in with the form and the reason.
func (s *Service) refusePage(w http.ResponseWriter, r *http.Request, err error) {
	d := problem.Prepare(w, err)
	http.SetCookie(w, sessionCookie(r, ""))
	s.render(w, d.Status, "login", view{Error: d.Detail})
}

// withKey is r carrying key as the API's requests do, for the
// authentication they share.
func withKey(r *http.Request, key string) *http.Request {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+key)
	return r
}

// sessionKey is the key r was authenticated with (see withKey).
func sessionKey(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// sessionCookie keeps key for the page's paths; an empty key ends the
// session.
func sessionCookie(r *http.Request, key string) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: key, Path: PageRoot, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
	if key == "" {
		c.MaxAge = -1
	}
	return c
}

// csrfToken is the token of the forms of the session whose key is key.
func csrfToken(key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("onceflow admin page form"))
	return hex.EncodeToString(m.Sum(nil))
}

// validToken reports whether the form of r carries its session's token.
func validToken(r *http.Request) bool {
	return hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(csrfToken(sessionKey(r))))
}

// view is what a page template gets.
type view struct {
	Actor, Token, Note, Error string
	Now                       time.Time

	// dashboard
	Since    time.Time
	Handlers []outcomeRow
	Groups   []poison.Group
	Filter   poison.Filter
	Messages []poison.Message
	Next     string
	Classes  []poison.Class

	// message
	Message  *poison.Message
	Refusal  string
	Metadata [][2]string

	// keys
	HandlerNames []string
	Target       Target
	Record       *Record
}

type outcomeRow struct {
	Handler  string
	Counts   []float64
	Poisoned string
}

func (s *Service) newView(r *http.Request, actor string) view {
	return view{Actor: actor, Token: csrfToken(sessionKey(r)), Note: r.URL.Query().Get("note"), Now: time.Now(),
		Classes: poison.Classes, HandlerNames: append(slices.Clone(s.cfg.Handlers), idempotencykey.Scope)}
}

// dashboard is the page's root: the outcomes of the last minutes, the
// parked messages by handler and class, and a page of them.
func (s *Service) dashboard(w http.ResponseWriter, r *http.Request, actor string) {
	v := s.newView(r, actor)
	f, err := ParseFilter(r.URL.Query())
	if err != nil {
		v.Error = err.Error()
	}
	v.Filter = f
	if s.cfg.Outcomes != nil {
		counts, since := s.window.over(v.Now, pageWindow, s.cfg.Outcomes())
		v.Since = since
		for _, h := range s.cfg.Handlers {
			row := outcomeRow{Handler: h}
			for _, o := range pageOutcomes {
				row.Counts = append(row.Counts, counts[h][o])
			}
			v.Handlers = append(v.Handlers, row)
		}
	}
	if c := s.cfg.Poison; c != nil {
		if len(v.Handlers) > 0 {
			recent, more, err := c.Store.List(r.Context(), poison.Filter{Since: v.Since, State: poison.All, Limit: poison.MaxLimit})
			if err != nil {
				v.Error = err.Error()
			}
			for i := range v.Handlers {
				n := 0
				for _, m := range recent {
					if m.Handler == v.Handlers[i].Handler {
						n++
					}
				}
				v.Handlers[i].Poisoned = strconv.Itoa(n)
				if more != "" {
					v.Handlers[i].Poisoned += "+" // more than a page of them: at least n
				}
			}
		}
		if v.Groups, err = c.Store.Summary(r.Context()); err != nil {
			v.Error = err.Error()
		}
		if v.Messages, v.Next, err = c.Store.List(r.Context(), f); err != nil {
			v.Error = err.Error()
		}
	}
	s.render(w, http.StatusOK, "dashboard", v)
}

// messagePage shows one parked message.
func (s *Service) messagePage(w http.ResponseWriter, r *http.Request, actor string) {
	v := s.newView(r, actor)
	if s.cfg.Poison == nil {
		s.render(w, http.StatusNotFound, "error", view{Actor: actor, Error: "the poison console is off"})
		return
	}
	m, err := s.cfg.Poison.Store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		v.Error = poisonError(err).Error()
		s.render(w, problem.KindOf(poisonError(err)).Status(), "error", v)
		return
	}
	v.Message = &m
	if err := s.cfg.Poison.Redrivable(m, false); err != nil {
		v.Refusal = err.Error()
	}
	for _, k := range slices.Sorted(maps.Keys(m.Metadata)) {
		v.Metadata = append(v.Metadata, [2]string{k, m.Metadata[k]})
	}
	s.render(w, http.StatusOK, "message", v)
}

// settleOne redrives or discards one message, then shows it.
func (s *Service) settleOne(w http.ResponseWriter, r *http.Request, actor string) {
	id := r.PathValue("id")
	back := pagePrefix + "messages/" + url.PathEscape(id)
	if s.cfg.Poison == nil {
		s.redirect(w, r, back, "the poison console is off")
		return
	}
	var err error
	switch r.PathValue("action") {
	case "redrive":
		_, err = s.cfg.Poison.Redrive(r.Context(), id, actor, r.PostFormValue("force") == "on")
	case "discard":
		_, err = s.cfg.Poison.Discard(r.Context(), id, actor)
	default:
		err = errors.New("no such action")
	}
	note := r.PathValue("action") + ": done"
	if err != nil {
		note = r.PathValue("action") + " refused: " + err.Error()
	}
	s.redirect(w, r, back, note)
}

// settleGroup redrives or discards the parked messages of a handler and
// class, then shows the dashboard.
func (s *Service) settleGroup(w http.ResponseWriter, r *http.Request, actor string) {
	if s.cfg.Poison == nil {
		s.redirect(w, r, PageRoot, "the poison console is off")
		return
	}
	f := poison.Filter{Handler: r.PostFormValue("handler")}
	class, err := poison.ParseClass(r.PostFormValue("class"))
	if err != nil {
		s.redirect(w, r, PageRoot, err.Error())
		return
	}
	f.Class = class
	var b poison.Batch
	switch action := r.PathValue("action"); action {
	case "redrive":
		b, err = s.cfg.Poison.RedriveAll(r.Context(), f, actor, false, false)
	case "discard":
		b, err = s.cfg.Poison.DiscardAll(r.Context(), f, actor, false)
	default:
		err = errors.New("no such action")
	}
	note := fmt.Sprintf("%s %s/%s: %d done, %d refused", r.PathValue("action"), f.Handler, f.Class, b.Done, b.Refused)
	if err != nil {
		note += " (stopped: " + err.Error() + ")"
	} else if i := slices.IndexFunc(b.Items, func(o poison.Outcome) bool { return o.Error != "" }); i >= 0 {
		note += " (" + b.Items[i].Error + ")"
	}
	s.redirect(w, r, PageRoot, note)
}

// keyPage looks up an idempotency record.
func (s *Service) keyPage(w http.ResponseWriter, r *http.Request, actor string) {
	v := s.newView(r, actor)
	q := r.URL.Query()
	v.Target = Target{Handler: q.Get("handler"), Key: q.Get("key"), Route: q.Get("route"), Client: q.Get("client")}
	if v.Target.Key != "" {
		rec, err := s.Get(r.Context(), v.Target)
		if err != nil {
			v.Error = err.Error()
		} else {
			v.Record, v.Target = &rec, rec.Target
		}
	}
	s.render(w, http.StatusOK, "keys", v)
}

// keyAction releases or evicts the record the form names.
func (s *Service) keyAction(w http.ResponseWriter, r *http.Request, actor string) {
	t := Target{Handler: r.PostFormValue("handler"), Key: r.PostFormValue("key"), Route: r.PostFormValue("route"), Client: r.PostFormValue("client")}
	var (
		rec Record
		err error
	)
	action := r.PathValue("action")
	switch action {
	case "release":
		rec, err = s.Release(r.Context(), t, r.PostFormValue("force") == "on")
	case "evict":
		rec, err = s.Evict(r.Context(), t)
	default:
		err = errors.New("no such action")
	}
	s.audit(r, action, t, r.PostFormValue("force"), rec, err)
	note := action + ": done"
	if err != nil {
		note = action + " refused: " + err.Error()
	}
	s.redirect(w, r, pagePrefix+"keys?"+url.Values{"handler": {t.Handler}, "key": {t.Key}, "route": {t.Route}, "client": {t.Client}}.Encode(), note)
}

// redirect sends the browser to path, a page of this console, with note.
func (s *Service) redirect(w http.ResponseWriter, r *http.Request, path, note string) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	http.Redirect(w, r, path+sep+"note="+url.QueryEscape(note), http.StatusSeeOther)
}

func (s *Service) render(w http.ResponseWriter, status int, name string, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := pageTemplates.ExecuteTemplate(w, name, v); err != nil {
		s.cfg.Logger.Error("rendering the operator page", "page", name, "err", err)
	}
}

// age is how long ago t was, to the second.
func age(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	case d < 48*time.Hour:
		return d.Round(time.Hour).String()
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}
