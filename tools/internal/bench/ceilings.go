package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// The ceiling contenders: each runs a store's own claim with its server's
// reference client, batched (Redis: pipelined) as fully as callers
// concurrent claims allow,
// so the client costs next to nothing and every round trip carries every
// claim in flight. Their claims/s are the most batching can bring the
// store to on this machine.
const (
	RedisBatchedContender   = "redis-benchmark-batched"
	PgbenchBatchedContender = "pgbench-batched"
)

// PipelinedClaims measures claims/s of `redis-benchmark -c 1 -P callers`
// running the store's claim command (see [redisstore.ClaimCommand]) on
// random keys under the run's prefix: one connection, each round trip
// claiming as many keys as callers can have in flight.
func PipelinedClaims(env *Env, tools Tools, callers int, window time.Duration) func(ctx context.Context) (float64, error) {
	return redisBenchmark(env, tools, 1, callers, window, func(context.Context) ([]string, error) {
		return claimCommand(env.Prefix + "rbb:" + nextKeys()), nil
	}, nil)
}

// claimCommand is the store's claim of random keys after prefix, with a
// fingerprint of SHA-256's size (printable: a program's arguments hold no
// NUL), for redis-benchmark, which puts a random number of its own in
// place of each __rand_int__.
func claimCommand(prefix string) []string {
	return redisstore.ClaimCommand(prefix+"__rand_int__", stores.NewToken(), []byte(strings.Repeat("f", 32)), 30*time.Second)
}

// BatchedClaims measures claims/s of `pgbench -c 1` running
// PgbenchBatchScript on the run's records table: one connection, each
// statement claiming as many fresh keys as clients can have in flight.
func BatchedClaims(env *Env, tools Tools, clients int, window time.Duration) func(ctx context.Context) (float64, error) {
	return keysPerCall(clients, pgbench(env, tools, 1, window, func() (string, error) {
		return PgbenchBatchScript(env.RecordsTable(), clients)
	}))
}

// keysPerCall turns the calls/s that calls measures into claims/s, each
// call claiming keys keys.
func keysPerCall(keys int, calls func(ctx context.Context) (float64, error)) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		rate, err := calls(ctx)
		return rate * float64(keys), err
	}
}

// PgbenchBatchScript is the pgbench script that runs the store's batched
// claim statement (see [postgres.ClaimSQL]) on table: keys
// distinct keys per transaction, all with one random token.
func PgbenchBatchScript(table string, keys int) (string, error) {
	_, stmt, err := postgres.ClaimSQL(table)
	if err != nil {
		return "", err
	}
	n := strconv.Itoa(keys)
	return pgbenchScript(stmt, strings.NewReplacer(
		// md5 scatters a statement's keys over the index, as the
		// single-claim script's random keys are.
		"$1", "(SELECT array_agg('pgbench:' || md5(:k || ':' || g)) FROM generate_series(1, "+n+") AS g)",
		"$2", "array_fill('t' || :tok, ARRAY["+n+"])",
		"$3", `array_fill('\x01'::bytea, ARRAY[`+n+"])",
		"$4", "array_fill(30000000::bigint, ARRAY["+n+"])",
	)), nil
}

// SetNXContender is the contender of the server-CPU comparison that runs a
// plain SET … PX … NX, the native conditional write the store's claim is
// held against.
const SetNXContender = "set-nx"

// ServerCPU measures the Redis server's CPU per request, in µs, of
// `redis-benchmark -c 8 -P 16` running the command cmd returns for a
// prefix of the round's own on random keys after it, by the server's own
// account (INFO cpu): what a call costs the server, its parsing and
// replying included, with enough in flight that the server's reads and
// writes of the sockets are shared as a batched store's are. A round
// issues about window's worth of requests, and deletes its keys once
// measured, so that no round pays for expiring an earlier one's.
func ServerCPU(env *Env, tools Tools, window time.Duration, cmd func(prefix string) []string) func(ctx context.Context) (float64, error) {
	var prefix string
	measure := redisBenchmark(env, tools, 8, 16, window, func(context.Context) ([]string, error) {
		prefix = env.Prefix + "cpu:" + nextKeys()
		return cmd(prefix), nil
	}, func(requests int, cpu time.Duration) float64 {
		return float64(cpu) / float64(time.Microsecond) / float64(requests)
	})
	return func(ctx context.Context) (float64, error) {
		v, err := measure(ctx)
		if err == nil {
			err = UnlinkKeys(ctx, env.Redis, prefix)
		}
		return v, err
	}
}

// GoRedisPipelinedContender is the contender of the Redis store-call
// comparison that sends the store's claim commands through go-redis in
// pipelines of callers, one after the other, with no batcher between (see
// [GoRedisPipelined]).
const GoRedisPipelinedContender = "go-redis-pipelined"

// GoRedisPipelined measures claims/s of one goroutine sending the store's
// claim command (see [redisstore.ClaimCommand]) on fresh keys through
// go-redis, callers commands per pipeline, a pipeline at a time: what the
// store's claims cost through its client without its batcher, its
// fencing or its parsing, beside which store-claims shows the batcher's
// own overhead.
func GoRedisPipelined(env *Env, callers int, window time.Duration) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		prefix := env.Prefix + "grp:"
		fp := make([]byte, 32)
		n, elapsed, err := spin(ctx, 1, window, func(ctx context.Context, key string) error {
			pipe := env.Redis.Pipeline()
			for i := range callers {
				claim := redisstore.ClaimCommand(prefix+key+":"+strconv.Itoa(i), stores.NewToken(), fp, 30*time.Second)
				args := make([]any, len(claim))
				for j, a := range claim {
					args[j] = a
				}
				pipe.Do(ctx, args...)
			}
			cmds, err := pipe.Exec(ctx)
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			for _, c := range cmds {
				if err := c.Err(); !errors.Is(err, redis.Nil) {
					return fmt.Errorf("claim of a fresh key: %v", err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		return float64(n) * float64(callers) / elapsed.Seconds(), nil
	}
}

// batcherNote states what the store's batcher and client keep of the
// claims go-redis alone passes with the same commands, in the same rounds.
func batcherNote(_ context.Context, rep *Report) ([]string, error) {
	res, ok := rep.Result(RedisCalls)
	if !ok {
		return nil, nil
	}
	store, ok1 := res.Median(StoreClaimsContender)
	plain, ok2 := res.Median(GoRedisPipelinedContender)
	ratio, ok3 := res.Paired(StoreClaimsContender, GoRedisPipelinedContender, Ratio)
	if !ok1 || !ok2 || !ok3 {
		return nil, nil
	}
	return []string{fmt.Sprintf("Batcher: the Redis store's claims from %d callers reach %.0f claims/s, %.3f x (median of the rounds' ratios) "+
		"the %.0f/s of the same claim commands sent by go-redis alone in pipelines of %d, one goroutine, no batcher.",
		RedisCallers, store, ratio, plain, RedisCallers)}, nil
}

// postgresFloorNote states what the PostgreSQL store's Claims and
// Completes pass against pgbench running the floor of the same rows, in
// the same rounds.
func postgresFloorNote(_ context.Context, rep *Report) ([]string, error) {
	res, ok := rep.Result(PostgresCalls)
	if !ok {
		return nil, nil
	}
	store, ok1 := res.Median("store")
	floor, ok2 := res.Median(PgbenchFloorContender)
	ratio, ok3 := res.Paired("store", PgbenchFloorContender, Ratio)
	if !ok1 || !ok2 || !ok3 {
		return nil, nil
	}
	return []string{fmt.Sprintf("Floor: postgres: the store's Claims and Completes from %d callers pass %.0f calls/s, %.3f x (median of the rounds' ratios) "+
		"the %.0f/s of pgbench at %d clients running the floor of the same rows (an INSERT … ON CONFLICT DO NOTHING and an UPDATE by key per message).",
		PostgresClients, store, ratio, floor, PostgresClients)}, nil
}
