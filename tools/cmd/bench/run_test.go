package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

func TestFlagsRejectUnknownSize(t *testing.T) {
	var stderr bytes.Buffer
	if _, err := parseFlags([]string{"-size", "huge"}, &stderr); err == nil || !strings.Contains(err.Error(), "huge") {
		t.Errorf("err = %v, want one naming the size", err)
	}
	if _, err := parseFlags([]string{"extra"}, &stderr); err == nil {
		t.Error("no error for a stray argument")
	}
}

// A tiny run measures every comparison, sweep and profile: it prints one
// TARGET line with a measured value per target last, the plan's and the
// flows', and writes the report and the plots beside it.
func TestTinyRunWritesReport(t *testing.T) {
	testenv.Integration(t)
	if err := (bench.Tools{}).Check(); err != nil {
		testenv.Unreachable(t, "redis-benchmark and pgbench", "PATH", err)
	}
	t.Setenv("TEST_REDIS_ADDR", testenv.RedisAddr())
	t.Setenv("TEST_DATABASE_URL", testenv.PostgresURL())
	out := filepath.Join(t.TempDir(), "PERFORMANCE.md")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"-size", "tiny", "-out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	_, tail, ok := strings.Cut(stdout.String(), "== targets")
	if !ok {
		t.Fatalf("no targets section in\n%s", stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(tail), "\n")[1:]
	re := regexp.MustCompile(`^TARGET (\S+) ratio=(-?[0-9]+\.[0-9]{3}|NaN) goal=(>=|<=)[0-9.]+ (PASS|MISS)$`)
	judged, missed := map[string]bool{}, map[string]bool{}
	for _, line := range lines {
		m := re.FindStringSubmatch(line)
		// A tiny round is shorter than the ticks the machine's CPU times
		// count in: the floor's figure may read nothing.
		if m == nil || (m[2] == "NaN" && !strings.HasPrefix(m[1], floorTargetPrefix)) {
			t.Errorf("line %q after the targets header is not a TARGET line with a measured value", line)
			continue
		}
		judged[m[1]], missed[m[1]] = true, m[4] == "MISS"
	}
	var want []string
	for _, target := range bench.NewPlan(bench.Tiny, bench.Deps{}).Targets {
		want = append(want, target.Name)
	}
	for _, kind := range transportKinds {
		want = append(want, receiverTargetPrefix+kind, floorTargetPrefix+kind)
	}
	for _, kind := range flow.ServiceKinds {
		want = append(want, serviceTaxTargetPrefix+kind)
	}
	for _, kind := range inFlightKinds {
		want = append(want, concurrencyTargetPrefix+kind)
		if slices.Contains(flow.ServiceKinds, kind) {
			want = append(want, serviceConcurrencyTargetPrefix+kind)
		}
	}
	want = append(want, "http-idempotency-p50-memory", "retention-claim-p99")
	for _, name := range want {
		if !judged[name] {
			t.Errorf("no measured TARGET line for %s in\n%s", name, tail)
		}
	}
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "### payload: msg/s by payload bytes", "### concurrency: msg/s by callers",
		"### " + TransportSweep + ": msg/s by messages in flight", "### service-kafka (" + serviceUnit, "## Findings", "Batch fill: ",
		"go run ./cmd/bench -size tiny", "](" + bench.PlotFile(bench.CallersSweep) + ")", "](" + bench.PlotFile(TransportSweep) + ")",
		"cpu profile: receiver and store code"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// A missed receiver target is bounded by the CPU of its own rounds,
	// profiled.
	for _, kind := range transportKinds {
		if name := receiverTargetPrefix + kind; missed[name] {
			bound := regexp.MustCompile(`Bound: ` + name + `: the machine spent [^\n]*Per message, summed over the rounds, off → on: this process `)
			if !bound.Match(report) {
				t.Errorf("report lacks the CPU bound of %s", name)
			}
		}
	}
	// Every transport's floor is stated, and a missed receiver tax is
	// bounded by where its rounds' CPU went.
	for _, kind := range transportKinds {
		if !strings.Contains(string(report), "Floor: "+kind+": per message") {
			t.Errorf("report lacks the floor of %s", kind)
		}
	}
	for _, kind := range flow.ServiceKinds {
		if name := serviceTaxTargetPrefix + kind; missed[name] {
			bound := regexp.MustCompile(`Bound: ` + name + `: the machine spent [^\n]*Per request, summed over the rounds, without → with: this process `)
			if !bound.Match(report) {
				t.Errorf("report lacks the CPU bound of %s", name)
			}
		}
	}
	for _, sweep := range []string{bench.CallersSweep, TransportSweep} {
		png, err := os.ReadFile(filepath.Join(filepath.Dir(out), bench.PlotFile(sweep)))
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("plot of %s: %v, want a PNG", sweep, err)
		}
	}
}
