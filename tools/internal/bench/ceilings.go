package bench

import (
	"context"
	"strconv"
	"strings"
	"time"

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
