package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/internal/batch"
)

// claimReq is one Claim: the storage key, the token drawn for it, the
// fingerprint and the lease.
type claimReq struct {
	key         string
	token       stores.Token
	fingerprint []byte
	lease       time.Duration
}

// ClaimCommand returns the command with which a Store claims key (the
// storage key, Config.KeyPrefix included) for a new owner whose token is
// token: SET with NX, PX and GET, and the packed record. It is for tools
// that drive Redis themselves and measure the store's own claim, as the
// bench's redis-benchmark runs do; a Store's user never needs it. Run on
// a Store's key, it claims for that Store.
func ClaimCommand(key string, token stores.Token, fingerprint []byte, lease time.Duration) []string {
	now := time.Now()
	return []string{"SET", key, string(packClaim(token, fingerprint, now, now.Add(lease))),
		"PX", strconv.FormatInt(leaseMillis(lease), 10), "NX", "GET"}
}

// claimAll claims every request's key, putting each call's claim or error
// in res: one pipeline of native commands (one per key, split by node on a
// Cluster), then, for the answers only the claim script can give, one
// pipeline of the script. The calls' clock is read once, before they are
// sent.
func (s *Store) claimAll(ctx context.Context, reqs []claimReq, res []batch.Result[stores.Claim]) {
	if err := ctx.Err(); err != nil {
		for i := range res {
			res[i].Err = err
		}
		return
	}
	// Microseconds, as a record holds them: the owner is told the times
	// another caller reads.
	now := time.UnixMicro(time.Now().UnixMicro())
	command := func(r claimReq) []any {
		return []any{"set", s.redisKey(r.key), packClaim(r.token, r.fingerprint, now, now.Add(r.lease)), "px", leaseMillis(r.lease), "nx", "get"}
	}
	cmds := make([]*redis.Cmd, len(reqs))
	if len(reqs) == 1 {
		cmds[0] = s.client.Do(ctx, command(reqs[0])...) // a call alone needs no pipeline
	} else {
		pipe := s.client.Pipeline()
		for i, r := range reqs {
			cmds[i] = pipe.Do(ctx, command(r)...)
		}
		_, _ = pipe.Exec(ctx) // each command holds its own error
	}
	var scripted []int
	for i, c := range cmds {
		v, err := c.Text()
		switch {
		case errors.Is(err, redis.Nil): // absent: the command created the record
			res[i].Resp = stores.Claim{Status: stores.Acquired, Token: reqs[i].token, LeaseUntil: now.Add(reqs[i].lease),
				Record: stores.Record{CreatedAt: now}}
		case redis.HasErrorPrefix(err, "WRONGTYPE"): // a hash of the earlier layout
			scripted = append(scripted, i)
		case err != nil:
			res[i].Err = failed(ctx, "claim", err)
		default:
			r, err := unpack(v)
			if err != nil {
				// Not a record: something else wrote the key.
				res[i].Err = stores.Unavailable("claim", err)
				continue
			}
			if c, ok := r.claim(reqs[i].token); ok {
				res[i].Resp = c
				continue
			}
			scripted = append(scripted, i)
		}
	}
	if len(scripted) > 0 {
		s.claimScripted(ctx, reqs, scripted, res)
	}
}

// claimScripted runs the claim script for the requests at indexes only,
// in one pipeline.
func (s *Store) claimScripted(ctx context.Context, reqs []claimReq, only []int, res []batch.Result[stores.Claim]) {
	evals := make([]evalReq, len(only))
	for j, i := range only {
		r := reqs[i]
		evals[j] = evalReq{key: r.key, args: []any{string(r.token), r.fingerprint, stores.Micros(r.lease)}}
	}
	replies := make([]batch.Result[any], len(only))
	s.pipelined(ctx, "claim", claimScript, evals, replies)
	for j, i := range only {
		if res[i].Err = replies[j].Err; res[i].Err == nil {
			res[i].Resp, res[i].Err = parseClaim(replies[j].Resp, reqs[i].token)
		}
	}
}

// leaseMillis is lease in whole milliseconds, rounded up, as PX takes it:
// the key lives at least as long as the lease.
func leaseMillis(lease time.Duration) int64 {
	ms := int64(lease / time.Millisecond)
	if lease%time.Millisecond != 0 {
		ms++
	}
	return ms
}
