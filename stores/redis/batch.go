package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/internal/batch"
)

// Defaults of the batching settings, applied to zero settings. The batch
// size is the service's STORE_BATCH_SIZE default; the others apply when
// the batch size is 2 or more.
const (
	DefaultBatchSize    = 64
	DefaultBatchWorkers = 2
	DefaultBatchTimeout = 500 * time.Microsecond
	DefaultBatchLinger  = 200 * time.Microsecond
)

// evalReq is one call of a batch: the storage key and the script's three
// arguments for it.
type evalReq struct {
	key  string
	args []any
}

// batchers coalesce concurrent Claims and Completes (see Config.BatchSize).
// A batch of Claims is one pipeline of their native commands (see
// claimAll), in the batch's order.
type batchers struct {
	claim    *batch.Batcher[claimReq, stores.Claim]
	complete *batch.Batcher[evalReq, any]
}

func newBatchers(s *Store, bc batch.Config, observe func(op string, calls int)) *batchers {
	return &batchers{
		claim:    batch.New(batch.Observed(s.claimAll, "claim", observe), bc),
		complete: batch.New(batch.Observed(s.batched("complete", completeScript, completeAllScript), "complete", observe), bc),
	}
}

// batched returns the batch function of an operation whose script for one
// key is one and for every key of a batch is all. A batch of one runs as an
// unbatched call does. A larger one on a single server (a *redis.Client,
// which sends every key to one server) is one run of all: one command,
// which the server runs as one script instead of one per call. On a
// Cluster or a Ring, whose keys live on several servers, it is one
// pipeline of one script per call (see pipelined).
//
// Either way each call keeps its own reply or error, and calls on one key
// run in the batch's order, as unbatched calls would one after the other.
func (s *Store) batched(op string, one, all *redis.Script) batch.Func[evalReq, any] {
	_, oneServer := s.client.(*redis.Client)
	return func(ctx context.Context, reqs []evalReq, res []batch.Result[any]) {
		switch {
		case len(reqs) == 1:
			res[0].Resp, res[0].Err = s.run(ctx, op, one, reqs[0].key, reqs[0].args...)
		case oneServer:
			s.runAll(ctx, op, all, reqs, res)
		default:
			s.pipelined(ctx, op, one, reqs, res)
		}
	}
}

// runAll runs script once over every request's key and arguments and
// spreads its reply, one element per request, over res.
func (s *Store) runAll(ctx context.Context, op string, script *redis.Script, reqs []evalReq, res []batch.Result[any]) {
	keys := make([]string, len(reqs))
	args := make([]any, 0, len(reqs)*len(reqs[0].args))
	for i, r := range reqs {
		keys[i] = s.redisKey(r.key)
		args = append(args, r.args...)
	}
	reply, err := s.eval(ctx, op, script, keys, args...)
	replies, ok := reply.([]any)
	if err == nil && (!ok || len(replies) != len(reqs)) {
		err = fmt.Errorf("unexpected reply %#v to a batch of %d", reply, len(reqs))
	}
	for i := range res {
		if err != nil {
			res[i].Err = err
			continue
		}
		if e, ok := replies[i].(redis.Error); ok {
			res[i].Err = failed(ctx, op, e)
			continue
		}
		res[i].Resp = replies[i]
	}
}

// pipelined sends the requests as one pipeline of EVALSHA, and the calls
// the server answered NOSCRIPT again with EVAL in a second pipeline. On a
// Cluster, go-redis splits a pipeline by the node that owns each key's
// slot, sends the parts concurrently and follows MOVED and ASK per command;
// each node runs its part in order.
func (s *Store) pipelined(ctx context.Context, op string, script *redis.Script, reqs []evalReq, res []batch.Result[any]) {
	cmds := s.evalAll(ctx, reqs, nil, script.EvalSha)
	var retry []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		again := s.evalAll(ctx, reqs, retry, script.Eval)
		for j, i := range retry {
			cmds[i] = again[j]
		}
	}
	for i, c := range cmds {
		reply, err := c.Result()
		if err != nil {
			res[i].Err = failed(ctx, op, err)
			continue
		}
		res[i].Resp = reply
	}
}

// evalAll runs eval for the requests at indexes only (all when nil) in one
// pipeline and returns their commands, each holding its own reply or error.
func (s *Store) evalAll(ctx context.Context, reqs []evalReq, only []int,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
) []*redis.Cmd {
	pipe := s.client.Pipeline()
	n := len(reqs)
	if only != nil {
		n = len(only)
	}
	cmds := make([]*redis.Cmd, n)
	for i := range n {
		r := reqs[i]
		if only != nil {
			r = reqs[only[i]]
		}
		cmds[i] = eval(ctx, pipe, []string{s.redisKey(r.key)}, r.args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	return cmds
}

// runComplete runs the complete script, batched when batching is on and
// Complete does not wait for replicas.
func (s *Store) runComplete(ctx context.Context, k string, args ...any) (any, error) {
	switch {
	case s.waitReplicas > 0:
		return s.runReplicated(ctx, "complete", completeScript, k, args...)
	case s.batch == nil:
		return s.run(ctx, "complete", completeScript, k, args...)
	}
	return s.batch.complete.Do(ctx, evalReq{key: k, args: args})
}
