package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/internal/batch"
	"github.com/onceflow/onceflow/stores/redis/internal/redisscript"
)

// The store's scripts; package internal/redisscript holds their Lua source
// and the record's layout. Complete has two: one for a call alone, the
// only kind a Cluster runs, and, for a batch on one server, one that runs
// the same function on every key of the batch.
var (
	claimScript       = redis.NewScript(redisscript.ClaimOne)
	completeScript    = redis.NewScript(redisscript.CompleteOne)
	completeAllScript = redis.NewScript(redisscript.CompleteBatch)
	releaseScript     = redis.NewScript(redisscript.Release)
	extendScript      = redis.NewScript(redisscript.Extend)
)

// Claim implements stores.Store. It sends one native command, SET … NX PX
// … GET, which creates the record of an absent key or answers the record
// the key holds; only an answer that needs the server's clock (see
// package internal/redisscript) takes a second round trip, to the claim
// script. The token is drawn before the call, so that a resent Claim knows
// its own record.
//
// An acquired lease's end is reported from the client's clock as it sends
// the command: the lease the server keeps starts when it runs the
// command, so it never ends before the end reported, and ends at most the
// call's duration after.
func (s *Store) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	k, err := stores.CheckClaim(key, lease)
	if err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", shown(key), err)
	}
	req := claimReq{key: k, token: stores.NewToken(), fingerprint: fingerprint, lease: lease}
	var c stores.Claim
	if s.batch == nil {
		var res [1]batch.Result[stores.Claim]
		s.claimAll(ctx, []claimReq{req}, res[:])
		c, err = res[0].Resp, res[0].Err
	} else {
		c, err = s.batch.claim.Do(ctx, req)
	}
	if err != nil {
		return stores.Claim{}, fmt.Errorf("claiming key %q: %w", k, err)
	}
	return c, nil
}

// Complete implements stores.Store. It runs completeScript: one round trip.
//
// With Config.WaitReplicas set, the same round trip carries a WAIT, and
// Complete returns nil only once that many replicas acknowledged the
// record, so that a failover to one of them keeps it. If fewer acknowledge
// within Config.WaitTimeout, Complete returns a stores.UnavailableError
// matching ErrNotReplicated, and the receiver's store-error policy applies.
// The record is completed on the master all the same: a redelivery still
// finds it there, unless the master fails over to a replica that lacks it
// before replicating it.
func (s *Store) Complete(ctx context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = stores.CheckDuration("ttl", ttl)
	}
	if err != nil {
		return fmt.Errorf("completing key %q: %w", shown(key), err)
	}
	reply, err := s.runComplete(ctx, k, string(token), result, stores.Micros(ttl))
	if err == nil {
		err = wantOwned(reply)
	}
	if err != nil {
		return fmt.Errorf("completing key %q: %w", k, err)
	}
	return nil
}

// Release implements stores.Store. It runs releaseScript: one round trip.
func (s *Store) Release(ctx context.Context, key string, token stores.Token) error {
	k, err := stores.CheckToken(key, token)
	if err != nil {
		return fmt.Errorf("releasing key %q: %w", shown(key), err)
	}
	reply, err := s.run(ctx, "release", releaseScript, k, string(token), callID())
	if err == nil {
		err = wantOwned(reply)
	}
	if err != nil {
		return fmt.Errorf("releasing key %q: %w", k, err)
	}
	return nil
}

// Extend implements stores.Store. It runs extendScript: one round trip.
func (s *Store) Extend(ctx context.Context, key string, token stores.Token, lease time.Duration) (time.Time, error) {
	k, err := stores.CheckToken(key, token)
	if err == nil {
		err = stores.CheckDuration("lease", lease)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", shown(key), err)
	}
	reply, err := s.run(ctx, "extend", extendScript, k, string(token), stores.Micros(lease), callID())
	if err != nil {
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, err)
	}
	until, ok := reply.(int64)
	switch {
	case !ok:
		return time.Time{}, fmt.Errorf("extending key %q: unexpected script reply %#v", k, reply)
	case until == 0:
		return time.Time{}, fmt.Errorf("extending key %q: %w", k, stores.ErrLeaseLost)
	}
	return time.UnixMicro(until), nil
}

// callID draws the id by which the Release and Extend scripts recognise a
// call that the client resends after losing its reply (see package
// internal/redisscript): random hex, as a token.
func callID() string { return string(stores.NewToken()) }

// run runs script on the record of storage key k and translates driver
// errors (see failed).
func (s *Store) run(ctx context.Context, op string, script *redis.Script, k string, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.eval(ctx, op, script, []string{s.redisKey(k)}, args...)
}

// eval runs script on the storage keys, with EVALSHA and, if the server
// does not know the script, EVAL, and translates driver errors (see failed).
func (s *Store) eval(ctx context.Context, op string, script *redis.Script, keys []string, args ...any) (any, error) {
	reply, err := script.Run(ctx, s.client, keys, args...).Result()
	if err == nil {
		return reply, nil
	}
	return nil, failed(ctx, op, err)
}

// failed translates a driver error of op: a done context gives an error
// matching the context's error, and any other failure a
// stores.UnavailableError (also matching stores.ErrClosed when the client
// was closed).
func failed(ctx context.Context, op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ctxErr := contextDone(ctx); ctxErr != nil {
		// The driver saw the deadline as a network timeout.
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	if errors.Is(err, redis.ErrClosed) {
		err = fmt.Errorf("%w: %w", stores.ErrClosed, err)
	}
	return stores.Unavailable(op, err)
}

// contextDone returns ctx's error, or context.DeadlineExceeded once ctx's
// deadline has passed: a connection deadline set from it can fire a moment
// before ctx.Err reports it.
func contextDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// wantOwned translates the 1-or-0 reply of the complete and release scripts.
func wantOwned(reply any) error {
	switch reply {
	case int64(1):
		return nil
	case int64(0):
		return stores.ErrLeaseLost
	default:
		return fmt.Errorf("unexpected script reply %#v", reply)
	}
}

// shown is how a key that failed validation appears in errors: its storage
// key when it has one, so that long or binary keys stay readable.
func shown(key string) string {
	if k, err := stores.StorageKey(key); err == nil {
		return k
	}
	return key
}
