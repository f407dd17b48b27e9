package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Readiness timing.
const (
	// readinessTimeout bounds each check behind /readyz: the store and the
	// broker.
	readinessTimeout = 2 * time.Second
	// readinessTTL is how long a verdict of /readyz is answered again
	// without checking: however many probes come, the store and the broker
	// are asked at most once per readinessTTL.
	readinessTTL = time.Second
)

// readinessCheck is one line of /readyz's checks.
type readinessCheck struct {
	name string
	// failed is what /readyz shows when check fails: "unreachable".
	failed string
	check  func(context.Context) error
	// logged: a failure is logged when the check stops passing, and a
	// recovery when it passes again. The router's are not: it is not
	// running until Run starts it, and Run logs when it stops.
	logged bool
}

// readiness is /readyz. It runs its checks at most once per ttl and
// answers every probe in between with that verdict; probes that arrive
// during a round of checks wait for it. It logs a check's failure once,
// when it starts failing, and once more when it passes again. Safe for
// concurrent use.
type readiness struct {
	checks []readinessCheck
	ttl    time.Duration
	logger *slog.Logger

	mu      sync.Mutex    // guards the fields below, never held through a check
	round   chan struct{} // closed when the round of checks under way ends; nil when none is
	at      time.Time     // when the verdict was made; zero: never
	ready   bool
	results map[string]string
	failing map[string]bool // the logged checks failing since their failure was logged
}

// newReadiness is the readiness of the router (running), the store and,
// when broker is not nil, the broker.
func newReadiness(running func() bool, store, broker func(context.Context) error, logger *slog.Logger) *readiness {
	checks := []readinessCheck{
		{name: "router", failed: "not running", check: func(context.Context) error {
			if !running() {
				return errors.New("the router is not running")
			}
			return nil
		}},
		{name: "store", failed: "unreachable", check: store, logged: true},
	}
	if broker != nil {
		checks = append(checks, readinessCheck{name: "broker", failed: "unreachable", check: broker, logged: true})
	}
	return &readiness{checks: checks, ttl: readinessTTL, logger: logger, failing: map[string]bool{}}
}

// verdict returns whether the service is ready and each check's result,
// as of at most ttl ago, or else of a round of checks it runs now, or of
// the round under way when it is called. A round runs on a context of its
// own, each check bounded by readinessTimeout: a prober that hangs up does
// not fail it for the others.
func (r *readiness) verdict(ctx context.Context) (bool, map[string]string) {
	r.mu.Lock()
	if !r.at.IsZero() && time.Since(r.at) < r.ttl {
		defer r.mu.Unlock()
		return r.ready, r.results
	}
	if round := r.round; round != nil {
		r.mu.Unlock()
		<-round
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.ready, r.results
	}
	round := make(chan struct{})
	r.round = round
	r.mu.Unlock()

	ctx = context.WithoutCancel(ctx)
	ready, results := true, make(map[string]string, len(r.checks))
	errs := make([]error, len(r.checks))
	for i, c := range r.checks {
		errs[i] = runCheck(ctx, c.check)
		results[c.name] = "ok"
		if errs[i] != nil {
			ready, results[c.name] = false, c.failed
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.checks {
		if c.logged {
			r.logTransition(ctx, c, errs[i])
		}
	}
	r.at, r.ready, r.results, r.round = time.Now(), ready, results, nil
	close(round)
	return ready, results
}

func runCheck(ctx context.Context, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, readinessTimeout)
	defer cancel()
	return check(ctx)
}

// logTransition logs c's result err if it changes whether c fails.
func (r *readiness) logTransition(ctx context.Context, c readinessCheck, err error) {
	switch {
	case err != nil && !r.failing[c.name]:
		r.failing[c.name] = true
		r.logger.WarnContext(ctx, "readiness: "+c.name+" "+c.failed+"; not ready until it answers", "err", err)
	case err == nil && r.failing[c.name]:
		delete(r.failing, c.name)
		r.logger.InfoContext(ctx, "readiness: "+c.name+" answers again")
	}
}

// ServeHTTP answers 200 with status "ready", or 503 with "not ready", and
// each check's result.
func (r *readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ready, checks := r.verdict(req.Context())
	if !ready {
		writeStatus(w, http.StatusServiceUnavailable, "not ready", checks)
		return
	}
	writeStatus(w, http.StatusOK, "ready", checks)
}
