package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores/postgres"
)

// Tools names the reference programs; empty fields mean the name on PATH.
type Tools struct {
	RedisBenchmark string
	Pgbench        string
}

func (t Tools) redisBenchmark() string { return or(t.RedisBenchmark, "redis-benchmark") }
func (t Tools) pgbench() string        { return or(t.Pgbench, "pgbench") }

// Check reports, in one error, every reference program that cannot be run.
func (t Tools) Check() error {
	var errs []error
	for _, name := range []string{t.redisBenchmark(), t.pgbench()} {
		if _, err := exec.LookPath(name); err != nil {
			errs = append(errs, fmt.Errorf("%s not found (make bench-tools installs it): %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// RedisBenchmark measures requests/s of `redis-benchmark -c callers` running
// SET <key> v NX EX 60 on random keys under the run's prefix: the server's
// own rate for one unpipelined conditional write per request. Each round
// issues about window's worth of requests at the previous round's rate.
func RedisBenchmark(env *Env, tools Tools, callers int, window time.Duration) func(ctx context.Context) (float64, error) {
	return redisBenchmark(env, tools, callers, 1, window, func(context.Context) ([]string, error) {
		return []string{"SET", env.Prefix + "rb:" + nextKeys() + "__rand_int__", "v", "NX", "EX", "60"}, nil
	}, nil)
}

// redisBenchmark returns a contender that runs `redis-benchmark -c clients
// -P pipeline` with the command cmd returns, on random keys (its
// __rand_int__), and returns requests/s. A round issues about window's
// worth of requests at the previous round's rate (a first round: a tenth
// of window at 20k/s), and at least 100 per client, so one slow client
// does not set the clock. With served set, the round reads the server's
// CPU time (see serverCPU) before and after, and returns served of it
// instead: the requests and the CPU they cost the server.
func redisBenchmark(env *Env, tools Tools, clients, pipeline int, window time.Duration,
	cmd func(context.Context) ([]string, error), served func(requests int, cpu time.Duration) float64) func(ctx context.Context) (float64, error) {
	var rate float64 // the last round's, to size the next
	return func(ctx context.Context) (float64, error) {
		host, port, err := splitHostPort(env.RedisAddr)
		if err != nil {
			return 0, err
		}
		command, err := cmd(ctx)
		if err != nil {
			return 0, err
		}
		least := max(1000, 100*clients*pipeline)
		n := max(least, int(window.Seconds()*20_000/10))
		if rate > 0 {
			n = max(least, int(window.Seconds()*rate))
		}
		args := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-P", strconv.Itoa(pipeline),
			"-n", strconv.Itoa(n), "-r", "1000000000", "--csv"}, command...)
		var before time.Duration
		if served != nil {
			if before, err = serverCPU(ctx, env.Redis); err != nil {
				return 0, err
			}
		}
		out, err := run(ctx, tools.redisBenchmark(), args...)
		if err != nil {
			return 0, err
		}
		if rate, err = parseRedisBenchmarkCSV(out); err != nil || served == nil {
			return rate, err
		}
		after, err := serverCPU(ctx, env.Redis)
		if err != nil {
			return 0, err
		}
		return served(n, after-before), nil
	}
}

// serverCPU is the CPU time the Redis server's process has spent, user and
// system, by its own account (INFO cpu).
func serverCPU(ctx context.Context, c *redis.Client) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("reading the redis server's cpu: %w", err)
	}
	var total float64
	var found int
	for line := range strings.Lines(info) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_sys" && name != "used_cpu_user") {
			continue
		}
		secs, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the redis server's %s %q: %w", name, value, err)
		}
		total, found = total+secs, found+1
	}
	if found != 2 {
		return 0, fmt.Errorf("no used_cpu_sys and used_cpu_user in INFO cpu %q", info)
	}
	return time.Duration(total * float64(time.Second)), nil
}

// parseRedisBenchmarkCSV returns the rps column of redis-benchmark --csv's
// one result row.
func parseRedisBenchmarkCSV(out []byte) (float64, error) {
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("reading redis-benchmark output: %w", err)
	}
	if len(rows) < 2 || len(rows[0]) < 2 || rows[0][1] != "rps" {
		return 0, fmt.Errorf("unexpected redis-benchmark output %q", out)
	}
	return strconv.ParseFloat(rows[1][1], 64)
}

// PgbenchScript is the pgbench script that runs the store's own claim
// statement (see [postgres.ClaimSQL]) on table, with a random key and
// token per transaction.
func PgbenchScript(table string) (string, error) {
	stmt, _, err := postgres.ClaimSQL(table)
	if err != nil {
		return "", err
	}
	return pgbenchScript(stmt, strings.NewReplacer(
		"$1", "('pgbench:' || :k)",
		"$2", "('t' || :tok)",
		"$3", `'\x01'::bytea`,
		"$4", "30000000",
	)), nil
}

// PgbenchFloorContender is the contender of the PostgreSQL store-call
// comparison that runs the floor of a message's rows in pgbench (see
// [PgbenchFloor]).
const PgbenchFloorContender = "pgbench-floor"

// PgbenchFloorScript is the pgbench script of what a message's record
// must cost PostgreSQL at least: the claim's row inserted unless present
// (INSERT … ON CONFLICT DO NOTHING) and completed by key (UPDATE), each
// statement its own transaction, as the store's two calls are, on a
// random key of table.
func PgbenchFloorScript(table string) string {
	return "\\set k random(1, 1000000000)\n\\set tok random(1, 1000000000)\n" +
		"INSERT INTO " + table + " (key, state, token, fingerprint, created_at, expires_at) " +
		"VALUES ('pgfloor:' || :k, 'in_progress', 't' || :tok, '\\x01'::bytea, now(), now() + interval '30 seconds') ON CONFLICT DO NOTHING;\n" +
		"UPDATE " + table + " SET state = 'completed', result = '\\x01'::bytea, completed_at = now(), " +
		"expires_at = now() + interval '10 minutes' WHERE key = 'pgfloor:' || :k;\n"
}

// PgbenchFloor measures the calls/s of `pgbench -n -c clients` running
// PgbenchFloorScript on the run's records table, two per message as the
// store's calls count: the floor the store's Claim and Complete are held
// against.
func PgbenchFloor(env *Env, tools Tools, clients int, window time.Duration) func(ctx context.Context) (float64, error) {
	return keysPerCall(2, pgbench(env, tools, clients, window, func() (string, error) { return PgbenchFloorScript(env.RecordsTable()), nil }))
}

// pgbenchScript is a script of one transaction running stmt with its
// parameters bound by params to pgbench expressions, which may use :k and
// :tok, each drawn at random per transaction.
func pgbenchScript(stmt string, params *strings.Replacer) string {
	// pgbench reads a statement up to its terminating semicolon.
	return "\\set k random(1, 1000000000)\n\\set tok random(1, 1000000000)\n" +
		strings.TrimSpace(params.Replace(stmt)) + ";\n"
}

// Pgbench measures transactions/s of `pgbench -n -c clients` running
// PgbenchScript on the run's records table (schema-qualified: pgbench
// connects to the base URL, as libpq knows no search_path): one claim
// statement per transaction, connection time excluded.
func Pgbench(env *Env, tools Tools, clients int, window time.Duration) func(ctx context.Context) (float64, error) {
	return pgbench(env, tools, clients, window, func() (string, error) { return PgbenchScript(env.RecordsTable()) })
}

// pgbench returns a contender that runs `pgbench -n -c clients` on the
// script script returns and reports its transactions/s: about window's worth
// of transactions at the previous round's rate (a first round: 2,000/s),
// and at least 100 per client.
func pgbench(env *Env, tools Tools, clients int, window time.Duration, script func() (string, error)) func(ctx context.Context) (float64, error) {
	var rate float64 // the last round's, to size the next
	return func(ctx context.Context) (float64, error) {
		text, err := script()
		if err != nil {
			return 0, err
		}
		f, err := os.CreateTemp("", "onceflow-claim-*.sql")
		if err != nil {
			return 0, err
		}
		defer func() { _ = os.Remove(f.Name()) }()
		if _, err := f.WriteString(text); err != nil {
			_ = f.Close()
			return 0, err
		}
		if err := f.Close(); err != nil {
			return 0, err
		}
		// The store's idle connections go, so pgbench's fit beside them
		// within max_connections; the store's rounds reopen theirs
		// before their clock starts.
		env.Postgres.Reset()
		// Transactions per client, not a duration: pgbench's -T clock
		// includes connecting, which on a busy machine can take all of it.
		// At least 100 each: with fewer, the slowest client's last few
		// transactions set the clock.
		perClient := max(100, int(window.Seconds()*2_000/float64(clients)))
		if rate > 0 {
			perClient = max(100, int(window.Seconds()*rate/float64(clients)))
		}
		// Prepared statements, as pgx runs the store's (it caches them).
		out, err := run(ctx, tools.pgbench(), "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 4)),
			"-t", strconv.Itoa(perClient), "-f", f.Name(), env.base)
		if err != nil {
			return 0, err
		}
		rate, err = parsePgbenchTPS(out)
		return rate, err
	}
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// parsePgbenchTPS returns the tps pgbench reports.
func parsePgbenchTPS(out []byte) (float64, error) {
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps in pgbench output %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// run runs a reference program and returns its standard output; a failure
// carries its standard error.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func splitHostPort(addr string) (string, string, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", "", fmt.Errorf("redis address %q has no port", addr)
	}
	return strings.Trim(addr[:i], "[]"), addr[i+1:], nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
