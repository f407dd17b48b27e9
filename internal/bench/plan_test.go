package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/bench"
	"github.com/onceflow/onceflow/internal/testenv"
)

// openEnv opens the run's services, skipping (failing under
// REQUIRE_SERVICES=1) when they or the reference programs are missing.
func openEnv(t *testing.T) bench.Deps {
	t.Helper()
	testenv.Integration(t)
	tools := bench.Tools{}
	if err := tools.Check(); err != nil {
		testenv.Unreachable(t, "redis-benchmark and pgbench", "PATH", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := bench.OpenEnv(ctx, bench.EnvConfig{RedisAddr: testenv.RedisAddr(), PostgresURL: testenv.PostgresURL()})
	if err != nil {
		testenv.Unreachable(t, "Redis and PostgreSQL", testenv.RedisAddr()+", "+testenv.PostgresURL(), err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("closing the env: %v", err)
		}
	})
	return bench.Deps{Env: env, Tools: tools}
}

// The tiny plan runs every comparison, sweep and profile, and ends with one
// well-formed TARGET line per target, each with a measured value.
func TestTinyPlanJudgesEveryTarget(t *testing.T) {
	deps := openEnv(t)
	plan := bench.NewPlan(bench.Tiny, deps)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := plan.Run(ctx, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	var out bytes.Buffer
	rep.WriteTargets(&out)
	if len(plan.Targets) < 8 {
		t.Errorf("plan has %d targets, want the 8 of the issue at least", len(plan.Targets))
	}
	for _, target := range plan.Targets {
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^TARGET %s ratio=-?[0-9]+\.[0-9]{3} goal=(>=|<=)[0-9.]+ (PASS|MISS)$`,
			regexp.QuoteMeta(target.Name)))
		if !line.Match(out.Bytes()) {
			t.Errorf("no measured TARGET line for %s in\n%s", target.Name, out.String())
		}
	}
	for _, name := range []string{bench.PayloadSweep, bench.CallersSweep} {
		s, ok := rep.Sweep(name)
		if !ok {
			t.Fatalf("no sweep %s", name)
		}
		for _, b := range s.Backends {
			if got := len(s.Cells[b]); got != len(s.Values) {
				t.Errorf("sweep %s, %s: %d cells, want %d", name, b, got, len(s.Values))
			}
		}
	}
	if len(rep.Findings) == 0 {
		t.Error("no findings")
	}
}
