package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// Round i starts with contender i mod n, so each contender leads a round
// in turn; medians are taken per contender.
func TestComparisonRotatesRoundsAndTakesMedians(t *testing.T) {
	var order []string
	values := map[string][]float64{"a": {5, 1, 3}, "b": {10, 30, 20}}
	contender := func(name string) Contender {
		return Contender{Name: name, Measure: func(context.Context) (float64, error) {
			order = append(order, name)
			v := values[name][0]
			values[name] = values[name][1:]
			return v, nil
		}}
	}
	res, err := Comparison{Name: "c", Contenders: []Contender{contender("a"), contender("b")}}.Run(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "b", "a", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if m, _ := res.Median("a"); m != 3 {
		t.Errorf("median of a = %v, want 3", m)
	}
	if m, _ := res.Median("b"); m != 20 {
		t.Errorf("median of b = %v, want 20", m)
	}
}

// Done runs once the rounds are over, after the last and after a failed
// one; its error is returned without spoiling the measurements.
func TestComparisonDoneRunsAfterItsRounds(t *testing.T) {
	var log []string
	measure := func(fail bool) Contender {
		return Contender{Name: "a", Measure: func(context.Context) (float64, error) {
			log = append(log, "round")
			if fail {
				return 0, errors.New("boom")
			}
			return 1, nil
		}}
	}
	done := func() error { log = append(log, "done"); return errors.New("left over") }
	res, err := Comparison{Name: "c", Contenders: []Contender{measure(false)}, Done: done}.Run(t.Context(), 2)
	if want := []string{"round", "round", "done"}; !slices.Equal(log, want) {
		t.Errorf("ran %v, want %v", log, want)
	}
	if err == nil || !strings.Contains(err.Error(), "left over") || res.Err != nil {
		t.Errorf("err %v, result's %v: want Done's error, and the measurements kept", err, res.Err)
	}
	if m, ok := res.Median("a"); !ok || m != 1 {
		t.Errorf("median %v, %v", m, ok)
	}
	log = nil
	_, err = Comparison{Name: "c", Contenders: []Contender{measure(true)}, Done: done}.Run(t.Context(), 2)
	if want := []string{"round", "done"}; !slices.Equal(log, want) {
		t.Errorf("ran %v, want %v", log, want)
	}
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "left over") {
		t.Errorf("err %v, want both errors", err)
	}
}

func TestComparisonStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	res, err := Comparison{Name: "c", Contenders: []Contender{
		{Name: "x", Measure: func(context.Context) (float64, error) { return 0, boom }},
	}}.Run(t.Context(), 5)
	if !errors.Is(err, boom) || !errors.Is(res.Err, boom) {
		t.Fatalf("err %v, res.Err %v; want boom", err, res.Err)
	}
	if _, ok := res.Median("x"); ok {
		t.Error("a failed comparison has a median")
	}
}

func TestTargetLines(t *testing.T) {
	results := []Result{{Name: "c", Samples: []Samples{
		{Contender: "a", Values: []float64{90, 45, 180}, Median: 90},
		{Contender: "b", Values: []float64{100, 50, 200}, Median: 100},
		{Contender: "n", Values: []float64{2}, Median: 2},
	}}}
	for _, tc := range []struct {
		target Target
		want   string
	}{
		{Target{Name: "ratio", Comparison: "c", Of: "a", Over: "b", Op: AtLeast, Goal: 0.9}, "TARGET ratio ratio=0.900 goal=>=0.9 PASS"},
		{Target{Name: "ratio-miss", Comparison: "c", Of: "a", Over: "b", Op: AtLeast, Goal: 1}, "TARGET ratio-miss ratio=0.900 goal=>=1 MISS"},
		{Target{Name: "value", Comparison: "c", Of: "n", Op: AtMost, Goal: 2}, "TARGET value ratio=2.000 goal=<=2 PASS"},
		{Target{Name: "minus", Comparison: "c", Of: "b", Over: "a", Minus: true, Op: AtMost, Goal: 10}, "TARGET minus ratio=10.000 goal=<=10 PASS"},
		{Target{Name: "missing", Comparison: "gone", Of: "a", Over: "b", Op: AtLeast, Goal: 0.8}, "TARGET missing ratio=NaN goal=>=0.8 MISS"},
	} {
		if got := tc.target.Judge(results).Line(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// A target pairs each round's measurements: here the machine runs at half
// pace from round 3 on, and the median of the round-by-round ratios (1.048)
// is not the ratio of the medians (116 / 110 = 1.055), which come from
// different rounds.
func TestTargetRatioIsTheMedianOfEachRoundsRatio(t *testing.T) {
	a := []float64{212, 220, 104, 100, 116}
	b := []float64{200, 210, 100, 105, 110}
	res := Result{Name: "c", Samples: []Samples{
		{Contender: "a", Values: a, Median: median(a)},
		{Contender: "b", Values: b, Median: median(b)},
	}}
	v := Target{Name: "t", Comparison: "c", Of: "a", Over: "b", Op: AtLeast, Goal: 1.05}.Judge([]Result{res})
	if got := v.Line(); got != "TARGET t ratio=1.048 goal=>=1.05 MISS" {
		t.Errorf("got %q, want the median of 212/200, 220/210, 104/100, 100/105 and 116/110", got)
	}
	if v.Met != 2 || v.Rounds != 5 {
		t.Errorf("%d of %d rounds met the goal, want 2 of 5: 212/200 and 116/110", v.Met, v.Rounds)
	}
	if _, ok := (Result{Samples: []Samples{{Contender: "a", Values: a}, {Contender: "b", Values: b[:3]}}}).Paired("a", "b", Ratio); ok {
		t.Error("contenders with different round counts were paired")
	}
}

// A target on one contender counts its own rounds against the goal.
func TestTargetCountsTheRoundsThatMeetItsGoal(t *testing.T) {
	trips := []float64{2, 3, 2, 2, 3}
	res := Result{Name: "c", Samples: []Samples{{Contender: "unique", Values: trips, Median: median(trips)}}}
	v := Target{Name: "t", Comparison: "c", Of: "unique", Op: AtMost, Goal: 2}.Judge([]Result{res})
	if !v.Pass || v.Met != 3 || v.Rounds != 5 {
		t.Errorf("got pass=%v with %d of %d rounds meeting <=2, want pass with 3 of 5", v.Pass, v.Met, v.Rounds)
	}
	if v := (Target{Name: "t", Comparison: "missing", Of: "unique", Op: AtMost, Goal: 2}).Judge([]Result{res}); v.Pass || v.Rounds != 0 {
		t.Errorf("a target on a missing comparison passed, or counted %d rounds", v.Rounds)
	}
}

func TestParseReferenceOutputs(t *testing.T) {
	rps, err := parseRedisBenchmarkCSV([]byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET k:__rand_int__ v NX EX 60","46511.63","1.0","0.1","0.9","1.5","2.0","3.0"
`))
	if err != nil || rps != 46511.63 {
		t.Errorf("redis-benchmark rps = %v, %v; want 46511.63", rps, err)
	}
	if _, err := parseRedisBenchmarkCSV([]byte("ERROR\n")); err == nil {
		t.Error("no error for output without an rps column")
	}
	tps, err := parsePgbenchTPS([]byte("number of failed transactions: 0 (0.000%)\ntps = 7199.470551 (without initial connection time)\n"))
	if err != nil || math.Abs(tps-7199.470551) > 1e-9 {
		t.Errorf("pgbench tps = %v, %v; want 7199.470551", tps, err)
	}
	if _, err := parsePgbenchTPS([]byte("connection failed\n")); err == nil {
		t.Error("no error for output without tps")
	}
}

// The scripts run the store's own statements (one claim; a batch over as
// many keys as given) with every parameter bound to a pgbench expression.
func TestPgbenchScriptsRunTheStoresStatements(t *testing.T) {
	for _, c := range []struct {
		name   string
		script func(table string) (string, error)
		want   []string
	}{
		{"claim", PgbenchScript, []string{"ON CONFLICT (key) DO UPDATE", "('pgbench:' || :k)", "r.token = ('t' || :tok)"}},
		{"batch", func(table string) (string, error) { return PgbenchBatchScript(table, 16) },
			[]string{"unnest(", "generate_series(1, 16)", "array_fill('t' || :tok, ARRAY[16])::text[]"}},
	} {
		script, err := c.script("s.idempotency_records")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range append(c.want, `INSERT INTO "s"."idempotency_records"`, `\set k random(1, 1000000000)`) {
			if !strings.Contains(script, want) {
				t.Errorf("%s script lacks %q:\n%s", c.name, want, script)
			}
		}
		if strings.Contains(script, "$") {
			t.Errorf("%s script keeps a parameter:\n%s", c.name, script)
		}
		if !strings.HasSuffix(script, ";\n") {
			t.Errorf("%s script does not end its statement:\n%s", c.name, script)
		}
	}
}

// spread gives every sequence number its own key, out of order.
func TestSpreadScattersDistinctKeys(t *testing.T) {
	seen := make(map[uint64]bool)
	ascending := 0
	var last uint64
	for i := uint64(1); i <= 100_000; i++ {
		k := spread(i)
		if seen[k] {
			t.Fatalf("spread(%d) = %d, already given", i, k)
		}
		seen[k] = true
		if k > last {
			ascending++
		}
		last = k
	}
	// Scattered keys rise about half the time; sequential ones always.
	if ascending < 45_000 || ascending > 55_000 {
		t.Errorf("%d of 100000 keys sort after the one before; want about half", ascending)
	}
}
