package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// The ceiling contenders: each runs a store's own claim with its server's
// reference client, batched as fully as callers concurrent claims allow,
// so the client costs next to nothing and every round trip carries every
// claim in flight. Their claims/s are the most batching can bring the
// store to on this machine.
const (
	RedisBatchedContender   = "redis-benchmark-batched"
	PgbenchBatchedContender = "pgbench-batched"
)

// ScriptedClaims measures claims/s of `redis-benchmark -c 1` running the
// store's batch claim script (see [redisstore.ClaimBatchScript]) on callers
// random keys under the run's prefix per call: one connection, each call
// claiming as many keys as callers can have in flight.
func ScriptedClaims(env *Env, tools Tools, callers int, window time.Duration) func(ctx context.Context) (float64, error) {
	return keysPerCall(callers, redisBenchmark(env, tools, 1, window, func(ctx context.Context) ([]string, error) {
		sha, err := env.Redis.ScriptLoad(ctx, redisstore.ClaimBatchScript()).Result()
		if err != nil {
			return nil, fmt.Errorf("loading the batch claim script: %w", err)
		}
		// redis-benchmark puts a random number of its own in place of
		// each __rand_int__.
		key := env.Prefix + "rbb:" + nextKeys() + "__rand_int__"
		cmd := []string{"EVALSHA", sha, strconv.Itoa(callers)}
		for range callers {
			cmd = append(cmd, key)
		}
		for range callers {
			cmd = append(cmd, "tok", "fingerprint", "30000000")
		}
		return cmd, nil
	}))
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
