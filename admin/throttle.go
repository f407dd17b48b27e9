package admin

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Defaults of [Throttle]: a source may fail to authenticate 10 times at
// once, then once every 6 seconds (10 a minute), and 10,000 sources are
// remembered.
const (
	DefaultThrottleBurst   = 10
	DefaultThrottleEvery   = 6 * time.Second
	DefaultThrottleSources = 10_000
)

// throttleLogEvery is how often the log has a line on one source's
// refused authentications, at most.
const throttleLogEvery = time.Minute

// Throttle bounds how fast one source may try keys on the admin API. Each
// source has an allowance of failed authentications (a token bucket,
// golang.org/x/time/rate): Burst at once, then one every Every. A request
// that fails to authenticate takes one; one that authenticates takes
// none. A source with none left gets 429 with Retry-After, the wait for
// its next attempt, before its key is looked at: a right key too, or a
// guess would still learn whether it was right. So whoever shares an
// operator's source (a NAT, a proxy) and sends wrong keys keeps that
// operator out too, for as long as they keep at it plus Every.
//
// Its zero value is the default.
type Throttle struct {
	// Burst is how many failed authentications a source may make at
	// once: [DefaultThrottleBurst] when not positive.
	Burst int
	// Every is how often a source regains one: [DefaultThrottleEvery]
	// when not positive.
	Every time.Duration
	// Sources bounds how many sources are remembered, the most recently
	// seen: [DefaultThrottleSources] when not positive. A source
	// forgotten starts again with a full allowance.
	Sources int
	// Source names a request's source: nil is [RemoteSource], which
	// trusts no header. Behind a proxy that sets the client's address
	// (and that every request passes), a fork reads it here.
	Source func(*http.Request) string
	// Now is the clock: nil is time.Now.
	Now func() time.Time
}

// RemoteSource is the default [Throttle.Source]: the IP address of the
// request's RemoteAddr (the connection's peer; no header is trusted),
// an IPv6 address by its /64, the block one host is given, so that
// stepping through it gains nothing.
func RemoteSource(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip = ip.Unmap(); ip.Is6() {
		if p, err := ip.WithZone("").Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// throttle is the state of a [Throttle]. It is safe for concurrent use.
type throttle struct {
	cfg     Throttle
	limit   rate.Limit
	sources *lru.Cache[string, *source]
}

// source is one source's allowance, and its refusals since its last log
// line.
type source struct {
	name    string
	limiter *rate.Limiter
	// mu is held across the check of a key, so that the source's
	// concurrent requests take their attempts one after another: many
	// requests at once get no more guesses than one after another.
	mu        sync.Mutex
	failed    int       // 401s since the last line
	throttled int       // 429s since the last line
	loggedAt  time.Time // of the last line; zero: none yet
}

func newThrottle(cfg Throttle) *throttle {
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultThrottleBurst
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultThrottleEvery
	}
	if cfg.Sources <= 0 {
		cfg.Sources = DefaultThrottleSources
	}
	if cfg.Source == nil {
		cfg.Source = RemoteSource
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	sources, _ := lru.New[string, *source](cfg.Sources) // fails only for a size that is not positive
	return &throttle{cfg: cfg, limit: rate.Every(cfg.Every), sources: sources}
}

// of returns the source of r.
func (t *throttle) of(r *http.Request) *source {
	name := t.cfg.Source(r)
	if s, ok := t.sources.Get(name); ok {
		return s
	}
	s := &source{name: name, limiter: rate.NewLimiter(t.limit, t.cfg.Burst)}
	if prev, ok, _ := t.sources.PeekOrAdd(name, s); ok {
		return prev
	}
	return s
}

// wait returns how long until s may try a key at now: zero if it may
// now. The caller holds s.mu.
func (t *throttle) wait(s *source, now time.Time) time.Duration {
	tokens := s.limiter.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(t.limit) * float64(time.Second))
}

// refusal is what a refused request adds to its source's tally, and
// whether it is time for the source's log line.
type refusal struct {
	failed, throttled int // since the last line, this one included
	log               bool
}

// refused counts a refusal of s at now, a 429 when throttled, else a 401
// (which takes one of its attempts). The caller holds s.mu.
func (t *throttle) refused(s *source, now time.Time, throttled bool) refusal {
	if throttled {
		s.throttled++
	} else {
		s.failed++
		s.limiter.AllowN(now, 1)
	}
	if !s.loggedAt.IsZero() && now.Sub(s.loggedAt) < throttleLogEvery {
		return refusal{}
	}
	r := refusal{failed: s.failed, throttled: s.throttled, log: true}
	s.failed, s.throttled, s.loggedAt = 0, 0, now
	return r
}
