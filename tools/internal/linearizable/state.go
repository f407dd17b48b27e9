package linearizable

import "github.com/onceflow/onceflow/stores"

// state is a key's record as the model knows it, and the earliest instant
// the last effect placed on it can have had. status 0 is absent. endLo and
// endHi bound the lease end (in progress) or the expiry (completed): equal
// when the store told it exactly, apart when only a call's window or
// nothing (endHi == never) bounds it. told says the store reported endLo
// as the lease end, which every later report must repeat: a lease a Claim
// acquired ends no earlier than the Claim reported, and may end up to the
// Claim's return later (see model.claim). An empty token is one only an unknown-outcome
// Claim can have issued.
type state struct {
	status      stores.Status
	token       stores.Token
	fingerprint string
	result      string
	endLo       int64
	endHi       int64
	told        bool
	now         int64
}

// owns reports whether token is the current owner's.
func (s state) owns(token stores.Token) bool {
	return s.status == stores.InProgress && token != "" && s.token == token
}

// completedBy reports whether token completed the record with result.
func (s state) completedBy(token stores.Token, result string) bool {
	return s.status == stores.Completed && token != "" && s.token == token && s.result == result
}

// hash is an FNV-1a hash of the state, for porcupine's cache.
func (s state) hash() uint64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
	for _, str := range []string{string(s.token), s.fingerprint, s.result} {
		for i := range len(str) {
			mix(str[i])
		}
		mix(0)
	}
	if s.told {
		mix(1)
	}
	for _, n := range []int64{int64(s.status), s.endLo, s.endHi, s.now} {
		for i := range 8 {
			mix(byte(n >> (8 * i)))
		}
	}
	return h
}
