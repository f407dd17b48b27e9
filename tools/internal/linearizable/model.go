package linearizable

import (
	"math"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// never is the time of an end nobody knows, and the return time of a call
// whose outcome is unknown. Times are nanoseconds since the recording began.
const never = math.MaxInt64

// model is the sequential specification of one key's record, with tol of
// slack between the store's clock and the clients'. With
// clockBeforeEffect a call may judge leases and expiries by the clock at
// any instant from its invocation on, before its effect is placed (see
// Config.ClockBeforeEffect).
type model struct {
	tol               int64
	clockBeforeEffect bool
}

// porcupine returns m as a porcupine model partitioned by key.
func (m model) porcupine() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return state{} },
		Step: func(s, in, out any) (bool, any) {
			ok, next := m.step(s.(state), in.(input), out.(output))
			return ok, next
		},
		Hash:              func(s any) uint64 { return s.(state).hash() },
		DescribeOperation: func(in, out any) string { return describeCall(in.(input), out.(output)) },
		DescribeState:     func(s any) string { return s.(state).String() },
	}
}

// partitionByKey splits a history into one per key: keys are independent.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		k := op.Input.(input).key
		i, ok := byKey[k]
		if !ok {
			i = len(parts)
			byKey[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// step reports whether a call with this input could have returned out in
// state s, and the state after it.
func (m model) step(s state, in input, out output) (bool, state) {
	t0 := max(s.now, in.call) // the earliest instant this call can take effect
	// j is the instant at which the call is judged live, the earliest
	// allowed: that of its effect, or its invocation.
	j := t0
	if m.clockBeforeEffect {
		j = in.call
	}
	if out.outcome == unknown {
		return true, m.unknownEffect(s, in, t0, j)
	}
	if t0 > out.ret {
		return false, s
	}
	switch in.kind {
	case claimCall:
		return m.claim(s, in, out, t0, j)
	case completeCall, releaseCall, extendCall:
		return m.write(s, in, out, t0, j)
	case lookupCall:
		return m.lookup(s, out, t0, j)
	}
	return false, s
}

func (m model) claim(s state, in input, out output, t0, j int64) (bool, state) {
	switch out.status {
	case stores.Acquired:
		t, ok := m.endedBy(s, t0, out.ret)
		if !ok || out.token == "" || !m.within(out.leaseUntil, in.call+in.lease, out.ret+in.lease) {
			return false, s
		}
		// The lease lasts at least until the end reported, and at most
		// the lease from the Claim's return: a store may report the end
		// from a clock read before the call took effect (Redis's native
		// claim reads the client's as it sends the command, and the
		// server's lease starts when it runs it).
		return true, state{
			status: stores.InProgress, token: out.token, fingerprint: in.fingerprint,
			endLo: out.leaseUntil, endHi: max(out.leaseUntil, sat(out.ret, in.lease)), told: true, now: t,
		}
	case stores.InProgress, stores.Completed:
		return m.observe(s, out, t0, j)
	}
	return false, s
}

// write steps Complete, Release and Extend, the calls fenced by a token.
func (m model) write(s state, in input, out output, t0, j int64) (bool, state) {
	owner := s.owns(in.token)
	switch out.outcome {
	case succeeded:
		if in.kind == completeCall && s.completedBy(in.token, in.result) && m.liveAt(s, j) {
			// Completing again changes nothing.
			s.now = t0
			return true, s
		}
		if !owner || !m.liveAt(s, j) {
			return false, s
		}
		switch in.kind {
		case completeCall:
			s.status, s.result = stores.Completed, in.result
			s.endLo, s.endHi, s.told = in.call+in.ttl, out.ret+in.ttl, false
		case releaseCall:
			s = state{}
		case extendCall:
			if !m.within(out.leaseUntil, in.call+in.lease, out.ret+in.lease) {
				return false, s
			}
			s.endLo, s.endHi, s.told = out.leaseUntil, out.leaseUntil, true
		}
		s.now = t0
		return true, s
	case leaseLost:
		if !owner {
			s.now = t0
			return true, s
		}
		// The owner's token is refused only once its lease has ended.
		// The record stays as it was: an ended lease reads as absent
		// anyway, and a store whose calls read its clock at different
		// instants of their windows may still have let the owner's
		// concurrent call through, within the tolerance (see liveAt).
		t, ok := m.endedBy(s, t0, out.ret)
		s.now = t
		return ok, s
	}
	return false, s
}

func (m model) lookup(s state, out output, t0, j int64) (bool, state) {
	switch out.outcome {
	case notFound:
		// As for a refused owner (see write), the record stays.
		t, ok := m.endedBy(s, t0, out.ret)
		s.now = t
		return ok, s
	case succeeded:
		if s.token != "" && out.token != s.token {
			return false, s
		}
		ok, next := m.observe(s, out, t0, j)
		next.token = out.token
		return ok, next
	}
	return false, s
}

// observe steps a call that read the live record: a Claim answered
// InProgress or Completed, or a Lookup that found it.
func (m model) observe(s state, out output, t0, j int64) (bool, state) {
	if out.status != s.status || out.fingerprint != s.fingerprint || !m.liveAt(s, j) {
		return false, s
	}
	switch s.status {
	case stores.InProgress:
		if s.told && !m.within(out.leaseUntil, s.endLo, s.endLo) || !m.within(out.leaseUntil, s.endLo, s.endHi) {
			return false, s
		}
		if !s.told {
			// A lease end nobody was told until now: a lower bound, as an
			// acquisition's report is.
			s.endLo, s.told = out.leaseUntil, true
		}
	case stores.Completed:
		// Expiries are not narrowed: a cache in front of a store may
		// report an earlier one than the store's, within the window.
		if out.result != s.result || !m.within(out.expiresAt, s.endLo, s.endHi) || j >= sat(out.expiresAt, m.tol) {
			return false, s
		}
	}
	s.now = t0
	return true, s
}

// unknownEffect is the state after a call whose outcome is unknown took
// effect at the earliest instant it could, from t0 on. A call that could
// not take effect here leaves s as it is, its instant included: that is
// the same as placing it after every other call, where it changes nothing
// anyone saw. Not taking effect at all is that placement too, which
// porcupine tries as well.
func (m model) unknownEffect(s state, in input, t0, j int64) state {
	owner := s.owns(in.token) && m.liveAt(s, j)
	switch {
	case in.kind == claimCall:
		t, _ := m.endedBy(s, t0, never)
		return state{
			status: stores.InProgress, fingerprint: in.fingerprint,
			endLo: in.call + in.lease, endHi: never, now: t,
		}
	case in.kind == completeCall && owner:
		s.status, s.result = stores.Completed, in.result
		s.endLo, s.endHi, s.told = in.call+in.ttl, never, false
	case in.kind == releaseCall && owner:
		s = state{}
	case in.kind == extendCall && owner:
		s.endLo, s.endHi, s.told = in.call+in.lease, never, false
	default:
		return s
	}
	s.now = t0
	return s
}

// liveAt reports whether s's record can still be live at t: some lease
// end or expiry it may have lies after t.
func (m model) liveAt(s state, t int64) bool {
	return s.status != 0 && t < sat(s.endHi, m.tol)
}

// endedBy returns the earliest instant in [t0, ret] at which s's record
// can have ended, and whether there is one. An absent record has ended.
func (m model) endedBy(s state, t0, ret int64) (int64, bool) {
	if s.status == 0 {
		return t0, true
	}
	t := max(t0, s.endLo-m.tol)
	return t, t <= ret
}

// within reports whether a store timestamp x lies in [lo, hi], with the
// model's slack.
func (m model) within(x, lo, hi int64) bool {
	return x >= lo-m.tol && x <= sat(hi, m.tol)
}

// sat is a+b, saturating at never.
func sat(a, b int64) int64 {
	if a > never-b {
		return never
	}
	return a + b
}
