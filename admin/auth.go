package admin

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/problem"
)

// operatorKeys checks the operators' keys, key to operator, and returns
// their resolver. Its errors name the operator, never a key.
func operatorKeys(keys map[string]string) (*apikey.Keys, error) {
	if len(keys) == 0 {
		return nil, errors.New("admin: no operator keys")
	}
	type entry struct{ key, operator string }
	entries := make([]entry, 0, len(keys))
	for k, op := range keys {
		entries = append(entries, entry{k, op})
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Or(cmp.Compare(a.operator, b.operator), cmp.Compare(a.key, b.key)) })
	for i, e := range entries {
		if err := apikey.CheckKey(e.key); err != nil {
			return nil, fmt.Errorf("admin: the key of operator %q: %w", e.operator, err)
		}
		if i > 0 && entries[i-1].operator == e.operator {
			return nil, fmt.Errorf("admin: operator %q has two keys: give each operator one, which names them in the log", e.operator)
		}
	}
	k, err := apikey.NewKeys(keys)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	return k, nil
}

// throttledDetail is the detail of a 429 to a throttled source.
const throttledDetail = "too many failed authentications from this address: retry after the time in Retry-After"

// authenticate serves next the requests that carry an operator's key,
// with the operator in their context ([apikey.ClientFromContext]), and
// refuses the others: with 401, which takes one of the source's attempts
// (see [Throttle]), or, while the source has none left, with 429 before
// the key is looked at. Refusals are counted (Config.OnAuthFailure,
// Config.OnThrottled) and logged at most once a minute per source, with
// how many there were since that source's previous line.
func (s *Service) authenticate(keys *apikey.Keys, next http.Handler) http.Handler {
	return s.authenticateOr(keys, next, func(w http.ResponseWriter, _ *http.Request, err error) { problem.Write(w, err) })
}

// authenticateOr is authenticate, answering a refusal with refuse.
func (s *Service) authenticateOr(keys *apikey.Keys, next http.Handler, refuse func(http.ResponseWriter, *http.Request, error)) http.Handler {
	t := s.throttle
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := t.of(r)
		var (
			authed *http.Request
			err    error
			tally  refusal
		)
		src.mu.Lock()
		now := t.cfg.Now()
		wait := t.wait(src, now)
		if wait == 0 {
			apikey.Authenticate(keys, func(_ http.ResponseWriter, e error) { err = e })(
				http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { authed = r })).ServeHTTP(w, r)
		}
		if authed == nil {
			tally = t.refused(src, now, wait > 0)
		}
		src.mu.Unlock()

		switch {
		case authed != nil:
			next.ServeHTTP(w, authed)
			return
		case wait > 0:
			err = &problem.Error{Kind: problem.TooManyRequests, RetryAfter: wait, Detail: throttledDetail}
			if s.cfg.OnThrottled != nil {
				s.cfg.OnThrottled()
			}
		case s.cfg.OnAuthFailure != nil:
			s.cfg.OnAuthFailure()
		}
		if tally.log {
			s.cfg.Logger.WarnContext(r.Context(), "admin authentication refused",
				"source", src.name, "remote_addr", r.RemoteAddr, "method", r.Method,
				"failed", tally.failed, "throttled", tally.throttled, "err", err)
		}
		refuse(w, r, err)
	})
}
