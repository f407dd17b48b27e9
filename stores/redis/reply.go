package redisstore

import (
	"fmt"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// parseClaim turns the reply of claimScript into a [stores.Claim]. token is the
// one offered to the script, which it kept if the claim was acquired.
//
// go-redis returns Redis bulk strings as Go strings holding the exact bytes,
// and integers as int64.
func parseClaim(reply any, token stores.Token) (stores.Claim, error) {
	r, ok := reply.([]any)
	if !ok || len(r) == 0 {
		return stores.Claim{}, fmt.Errorf("unexpected claim reply %#v", reply)
	}
	p := fields{r: r}
	switch p.str(0) {
	case "acquired":
		c := stores.Claim{Status: stores.Acquired, Token: token}
		c.Record.CreatedAt = p.time(1)
		c.LeaseUntil = p.time(2)
		return c, p.check(3)
	case "in_progress":
		c := stores.Claim{Status: stores.InProgress}
		c.Record.Fingerprint = p.bytes(1)
		c.Record.CreatedAt = p.time(2)
		c.LeaseUntil = p.time(3)
		return c, p.check(4)
	case "completed":
		return stores.Claim{Status: stores.Completed, Record: p.completed(1)}, p.check(6)
	default:
		return stores.Claim{}, fmt.Errorf("unexpected claim reply %#v", reply)
	}
}

// fields reads a script's array reply, remembering the first mismatch.
type fields struct {
	r   []any
	bad bool
}

func (p *fields) str(i int) string {
	if i < len(p.r) {
		if s, ok := p.r[i].(string); ok {
			return s
		}
	}
	p.bad = true
	return ""
}

// bytes copies a bulk string into a non-nil byte slice.
func (p *fields) bytes(i int) []byte { return []byte(p.str(i)) }

// completed reads a completed record from field i on: fingerprint, result,
// created, completed and expiry times, the order every script replies in.
func (p *fields) completed(i int) stores.Record {
	return stores.Record{Fingerprint: p.bytes(i), Result: p.bytes(i + 1),
		CreatedAt: p.time(i + 2), CompletedAt: p.time(i + 3), ExpiresAt: p.time(i + 4)}
}

func (p *fields) time(i int) time.Time {
	if i < len(p.r) {
		if n, ok := p.r[i].(int64); ok {
			return time.UnixMicro(n)
		}
	}
	p.bad = true
	return time.Time{}
}

// check reports a reply of the wrong shape: a missing or mistyped field, or
// a length other than n.
func (p *fields) check(n int) error {
	if p.bad || len(p.r) != n {
		return fmt.Errorf("unexpected script reply of %d fields", len(p.r))
	}
	return nil
}
