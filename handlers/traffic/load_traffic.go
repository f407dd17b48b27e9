package traffic

import (
	"math/rand/v2"
	"sync"
)

// traffic decides what each send of a load run carries: a new payment, or
// a copy of one handed out earlier (same payment id, same payload). It
// keeps track of which payments reached the service. Safe for concurrent
// use.
//
// Send n (from 0) is a copy when floor((n+1)*ratio) > floor(n*ratio), so
// the first N sends hold exactly floor(N*ratio) copies, spread evenly, and
// the first send is never one. A copy picks uniformly among the payments
// handed out so far: its original may still be in flight, as a broker's
// redelivery can race the first delivery.
type traffic struct {
	ratio float64
	limit int64 // sends to hand out; 0: no limit

	mu        sync.Mutex
	rng       *rand.Rand
	sends     int64
	delivered []bool // by payment: at least one copy sent
	failed    []bool // by payment: at least one copy failed
}

// newTraffic returns the traffic of a run with dupRatio in [0, 1) that
// hands out at most limit sends (0: no limit).
func newTraffic(dupRatio float64, limit int64) *traffic {
	return &traffic{ratio: dupRatio, limit: limit, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// next hands out the next send: the index of its payment, new or handed
// out before. ok is false once limit sends were handed out.
func (t *traffic) next() (payment int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit > 0 && t.sends >= t.limit {
		return 0, false
	}
	n := float64(t.sends)
	t.sends++
	if int64((n+1)*t.ratio) > int64(n*t.ratio) && len(t.delivered) > 0 {
		return t.rng.IntN(len(t.delivered)), true
	}
	t.delivered = append(t.delivered, false)
	t.failed = append(t.failed, false)
	return len(t.delivered) - 1, true
}

// done records the outcome of one send of payment.
func (t *traffic) done(payment int, sent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sent {
		t.delivered[payment] = true
	} else {
		t.failed[payment] = true
	}
}

// counts returns how many distinct payments had at least one copy sent
// (unique), and how many had none sent but at least one that failed
// (uncertain: a failed send may still have reached the service).
func (t *traffic) counts() (unique, uncertain int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ok := range t.delivered {
		switch {
		case ok:
			unique++
		case t.failed[i]:
			uncertain++
		}
	}
	return unique, uncertain
}
