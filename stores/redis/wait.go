package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
)

// ErrNotReplicated means that fewer replicas than Config.WaitReplicas
// acknowledged a completed record within Config.WaitTimeout. Complete
// returns it inside a [stores.UnavailableError]. The record is on the master.
var ErrNotReplicated = errors.New("too few replicas acknowledged the record")

// runReplicated runs script like run, then WAIT for Config.WaitReplicas,
// in one pipeline on one connection to the master of the key, so the WAIT
// covers the script's write: one round trip. A script that wrote nothing
// (a reply other than 1, such as a lease lost) is returned as it is; one
// that wrote, with a WAIT that fell short, gives ErrNotReplicated.
//
// On a Cluster the pipeline goes to the master that the client's slot map
// names for the key: the cluster client cannot pipeline WAIT itself (Redis
// tags it for all shards). While that slot moves, the master answers MOVED
// or ASK; Complete then fails as unavailable and the client reloads its
// slot map for the next call.
func (s *Store) runReplicated(ctx context.Context, op string, script *redis.Script, k string, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := s.redisKey(k)
	master, err := s.master(ctx, key)
	if err != nil {
		return nil, failed(ctx, op, err)
	}
	keys := []string{key}
	reply, acked, err := s.evalWait(ctx, master, func(p redis.Pipeliner) *redis.Cmd {
		return script.EvalSha(ctx, p, keys, args...)
	})
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		reply, acked, err = s.evalWait(ctx, master, func(p redis.Pipeliner) *redis.Cmd {
			return script.Eval(ctx, p, keys, args...)
		})
	}
	if err != nil {
		if c, ok := s.client.(*redis.ClusterClient); ok && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")) {
			c.ReloadState(ctx)
		}
		return nil, failed(ctx, op, err)
	}
	if reply == int64(1) && acked < int64(s.waitReplicas) {
		return nil, stores.Unavailable(op, fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, acked, s.waitReplicas, s.waitTimeout))
	}
	return reply, nil
}

// evalWait pipelines the script eval queues with a WAIT and returns the
// script's reply and the number of replicas that acknowledged.
func (s *Store) evalWait(ctx context.Context, c redis.Cmdable, eval func(redis.Pipeliner) *redis.Cmd) (any, int64, error) {
	pipe := c.Pipeline()
	run := eval(pipe)
	// WAIT's timeout is in milliseconds, and 0 would block for ever.
	wait := pipe.Do(ctx, "wait", s.waitReplicas, max(s.waitTimeout.Milliseconds(), 1))
	_, _ = pipe.Exec(ctx) // each command holds its own error
	reply, err := run.Result()
	if err != nil {
		return nil, 0, err
	}
	acked, err := wait.Int64()
	if err != nil {
		return nil, 0, fmt.Errorf("WAIT %d %v: %w", s.waitReplicas, s.waitTimeout, err)
	}
	return reply, acked, nil
}

// master returns the client of the node that holds key as master: on a
// Cluster the master of its slot, otherwise the client itself.
func (s *Store) master(ctx context.Context, key string) (redis.Cmdable, error) {
	c, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return s.client, nil
	}
	m, err := c.MasterForKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("finding the master of %s: %w", strings.TrimPrefix(key, s.prefix), err)
	}
	return m, nil
}
