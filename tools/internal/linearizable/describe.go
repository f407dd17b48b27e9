package linearizable

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/stores"
)

// Descriptions for porcupine's visualisation. Times are milliseconds since
// the recording began.

func describeCall(in input, out output) string {
	var b strings.Builder
	switch in.kind {
	case claimCall:
		fmt.Fprintf(&b, "claim %s lease %s", in.fingerprint, ms(in.lease))
	case completeCall:
		fmt.Fprintf(&b, "complete %s %s ttl %s", tok(in.token), in.result, ms(in.ttl))
	case releaseCall:
		fmt.Fprintf(&b, "release %s", tok(in.token))
	case extendCall:
		fmt.Fprintf(&b, "extend %s lease %s", tok(in.token), ms(in.lease))
	case lookupCall:
		b.WriteString("lookup")
	}
	b.WriteString(" → ")
	switch out.outcome {
	case unknown:
		fmt.Fprintf(&b, "unknown (%s)", out.err)
	case leaseLost:
		b.WriteString("lease lost")
	case notFound:
		b.WriteString("not found")
	case succeeded:
		b.WriteString(describeOutput(in, out))
	}
	return b.String()
}

func describeOutput(in input, out output) string {
	switch {
	case in.kind == completeCall || in.kind == releaseCall:
		return "ok"
	case in.kind == extendCall:
		return "lease until " + at(out.leaseUntil)
	}
	s := out.status.String()
	if out.token != "" {
		s += " " + tok(out.token)
	}
	switch out.status {
	case stores.Acquired:
		return s + " until " + at(out.leaseUntil)
	case stores.InProgress:
		return fmt.Sprintf("%s %s until %s", s, out.fingerprint, at(out.leaseUntil))
	case stores.Completed:
		return fmt.Sprintf("%s %s %s expires %s", s, out.fingerprint, out.result, at(out.expiresAt))
	}
	return s
}

// String describes the state for the visualisation.
func (s state) String() string {
	var b strings.Builder
	switch s.status {
	case 0:
		b.WriteString("absent")
	case stores.InProgress:
		fmt.Fprintf(&b, "in progress %s %s lease ends %s", tok(s.token), s.fingerprint, span(s.endLo, s.endHi))
	case stores.Completed:
		fmt.Fprintf(&b, "completed %s %s %s expires %s", tok(s.token), s.fingerprint, s.result, span(s.endLo, s.endHi))
	}
	fmt.Fprintf(&b, "; last effect ≥ %s", at(s.now))
	return b.String()
}

// tok shortens a token to its last 6 characters: the memory store's share
// a prefix and count up.
func tok(t stores.Token) string {
	if t == "" {
		return "token ?"
	}
	if len(t) > 6 {
		t = t[len(t)-6:]
	}
	return "token …" + string(t)
}

func span(lo, hi int64) string {
	if lo == hi {
		return at(lo)
	}
	return "in [" + at(lo) + ", " + at(hi) + "]"
}

func at(t int64) string {
	if t == never {
		return "?"
	}
	return ms(t)
}

func ms(d int64) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
