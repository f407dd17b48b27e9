package linearizable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// client is one of the concurrent callers: a worker that claims keys,
// completes, releases or extends what it owns, sometimes oversleeps its
// lease, and sometimes calls with a token it no longer owns.
type client struct {
	r    *recorder
	id   int
	rng  *rand.Rand
	seq  int
	held map[string]holding // key -> what this client believes it owns
	// stale holds, per key, the last tokens this client owned there.
	stale map[string][]stores.Token
	ops   []porcupine.Operation
}

type holding struct {
	token stores.Token
	lease time.Duration
}

// maxStale bounds the stale tokens kept per key.
const maxStale = 4

// run makes calls until deadline, then while the run lacks coverage (see
// recorder.overtime), and returns them.
func (c *client) run(deadline time.Time) []porcupine.Operation {
	for {
		overtime := !time.Now().Before(deadline)
		if overtime && !c.r.overtime() {
			return c.ops
		}
		k := c.pick()
		if h, ok := c.held[k]; ok {
			if overtime && !c.r.ownerLeaseEnded() {
				c.outlast(k, h)
				continue
			}
			if c.rng.IntN(5) == 0 {
				// A slow handler: its lease may end, and the key be
				// taken over, before its next call.
				time.Sleep(h.lease/2 + c.upTo(h.lease))
			}
			switch p := c.rng.IntN(100); {
			case p < 45:
				c.complete(k, h.token)
			case p < 60:
				c.release(k, h.token)
			case p < 85:
				c.extend(k, h.token)
			default:
				c.claim(k)
			}
		} else {
			switch p := c.rng.IntN(100); {
			case p < 60:
				c.claim(k)
			case p < 80 && len(c.stale[k]) > 0:
				c.staleCall(k)
			case c.r.admin != nil:
				c.lookup(k)
			default:
				c.claim(k)
			}
		}
		time.Sleep(c.upTo(c.r.cfg.Think))
	}
}

// outlast lets the lease this client holds on k end, then calls with its
// token, which the store must refuse: the case that checks expiry (see
// client.ended), driven on purpose when the run has not met it by chance.
// The lease ends at most h.lease after the call that set it returned.
func (c *client) outlast(k string, h holding) {
	time.Sleep(h.lease + 2*c.r.cfg.Tolerance)
	switch c.rng.IntN(3) {
	case 0:
		c.complete(k, h.token)
	case 1:
		c.release(k, h.token)
	default:
		c.extend(k, h.token)
	}
}

// pick picks the key of the next call: mostly one this client owns, as a
// worker gets on with what it claimed, else any.
func (c *client) pick() string {
	if len(c.held) > 0 && c.rng.IntN(4) != 0 {
		for k := range c.held {
			return k
		}
	}
	return c.r.keys[c.rng.IntN(len(c.r.keys))]
}

// upTo returns a duration drawn uniformly from [0, d].
func (c *client) upTo(d time.Duration) time.Duration {
	return time.Duration(c.rng.Int64N(int64(d) + 1))
}

func (c *client) lease() time.Duration {
	if c.outlive() {
		return c.r.cfg.Outlive
	}
	return c.r.cfg.MinLease + c.upTo(c.r.cfg.MaxLease-c.r.cfg.MinLease)
}

// outlive reports whether the next lease or TTL is Config.Outlive.
func (c *client) outlive() bool { return c.r.cfg.Outlive > 0 && c.rng.IntN(10) == 0 }

// unique returns a value no other call of the run uses, so that whatever
// reads it names the call that wrote it.
func (c *client) unique(prefix string) string {
	c.seq++
	return fmt.Sprintf("%s%d.%d", prefix, c.id, c.seq)
}

func (c *client) claim(k string) {
	in := input{kind: claimCall, key: k, fingerprint: c.unique("fp"), lease: int64(c.lease())}
	out := c.r.call(c, in, func(ctx context.Context) (output, error) {
		cl, err := c.r.store.Claim(ctx, k, []byte(in.fingerprint), time.Duration(in.lease))
		return output{
			status: cl.Status, token: cl.Token, leaseUntil: c.r.rel(cl.LeaseUntil),
			fingerprint: string(cl.Record.Fingerprint), result: string(cl.Record.Result),
			expiresAt: c.r.rel(cl.Record.ExpiresAt),
		}, err
	})
	switch {
	case out.outcome != succeeded:
	case out.status == stores.Acquired:
		c.drop(k)
		c.held[k] = holding{token: out.token, lease: time.Duration(in.lease)}
	default:
		// Busy or done: back off, as a redelivery would, rather than
		// fill the history with the same answer.
		time.Sleep(c.upTo(c.r.cfg.MinLease / 2))
	}
}

func (c *client) complete(k string, token stores.Token) {
	// Short enough for the record to expire and the key to be claimed
	// anew during the run.
	ttl := c.r.cfg.MinLease/2 + c.upTo((c.r.cfg.MaxLease-c.r.cfg.MinLease)/2)
	if c.outlive() {
		ttl = c.r.cfg.Outlive
	}
	in := input{kind: completeCall, key: k, token: token, result: c.unique("r"), ttl: int64(ttl)}
	out := c.r.call(c, in, func(ctx context.Context) (output, error) {
		return output{}, c.r.store.Complete(ctx, k, token, []byte(in.result), ttl)
	})
	c.ended(k, token, out)
	c.drop(k)
}

func (c *client) release(k string, token stores.Token) {
	in := input{kind: releaseCall, key: k, token: token}
	out := c.r.call(c, in, func(ctx context.Context) (output, error) {
		return output{}, c.r.store.Release(ctx, k, token)
	})
	c.ended(k, token, out)
	c.drop(k)
}

func (c *client) extend(k string, token stores.Token) {
	lease := c.lease()
	in := input{kind: extendCall, key: k, token: token, lease: int64(lease)}
	out := c.r.call(c, in, func(ctx context.Context) (output, error) {
		until, err := c.r.store.Extend(ctx, k, token, lease)
		return output{leaseUntil: c.r.rel(until)}, err
	})
	c.ended(k, token, out)
	switch {
	case out.outcome == leaseLost:
		c.drop(k)
	case c.held[k].token == token:
		c.held[k] = holding{token: token, lease: lease}
	}
}

// staleCall calls with a token this client owned before on k: it must be
// fenced off unless it is, unknown to the client, still the owner's.
func (c *client) staleCall(k string) {
	old := c.stale[k]
	token := old[c.rng.IntN(len(old))]
	switch c.rng.IntN(3) {
	case 0:
		c.complete(k, token)
	case 1:
		c.release(k, token)
	default:
		c.extend(k, token)
	}
}

func (c *client) lookup(k string) {
	in := input{kind: lookupCall, key: k}
	c.r.call(c, in, func(ctx context.Context) (output, error) {
		e, err := c.r.admin.Lookup(ctx, k)
		return output{
			status: e.Status, token: e.Token, leaseUntil: c.r.rel(e.LeaseUntil),
			fingerprint: string(e.Record.Fingerprint), result: string(e.Record.Result),
			expiresAt: c.r.rel(e.Record.ExpiresAt),
		}, err
	})
}

// ended counts a call with the token this client owns on k that found
// the lease ended: what the run must see for expiry to be checked.
func (c *client) ended(k string, token stores.Token, out output) {
	if out.outcome == leaseLost && c.held[k].token == token {
		c.r.mu.Lock()
		c.r.h.ownerLeasesEnded++
		c.r.mu.Unlock()
	}
}

// drop forgets that this client owns k, keeping the token as a stale one.
func (c *client) drop(k string) {
	h, ok := c.held[k]
	if !ok {
		return
	}
	delete(c.held, k)
	old := append(c.stale[k], h.token)
	if len(old) > maxStale {
		old = old[1:]
	}
	c.stale[k] = old
}
