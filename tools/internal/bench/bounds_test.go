package bench

import (
	"context"
	"strings"
	"testing"
)

// The memory bound is the floor contender's rate over the router's without
// middleware, both timed in the router's own rounds, and the split charges
// the receiver's excess over the floor to its own code.
func TestMemoryBoundIsTheFloorInTheSameRouter(t *testing.T) {
	for _, c := range []struct {
		floor float64
		want  []string
	}{
		{floor: 160_000, want: []string{"are 1.25µs and its own code 420ns", // 6.25µs a message
			"adds 1.25µs, so the ratio is at most 0.800 (measured 0.750)", "out of reach"}},
		{floor: 190_000, want: []string{"are 260ns and its own code 1.4µs", // 5.26µs a message
			"adds 260ns, so the ratio is at most 0.950 (measured 0.750)", "within reach of the store's cost"}},
	} {
		rep := &Report{
			Results: []Result{{Name: RouterMemory, Samples: []Samples{
				oneRound("none", 200_000),   // 5µs a message
				oneRound("memory", 150_000), // 6.67µs: measured 0.75
				oneRound("deduplicator", 125_000),
				oneRound(FloorContender, c.floor),
			}}},
			Verdicts: []Verdict{{Target: Target{Name: "memory-vs-none", Comparison: RouterMemory, Goal: 0.9}, Value: 0.75}},
		}
		lines, err := memoryBound(context.Background(), rep)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(lines, "\n")
		want := append(c.want, "takes 5µs per message", "leaves 560ns for the receiver",
			"the receiver adds 1.67µs", "Deduplicator adds 3µs")
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("floor %v: bound lacks %q:\n%s", c.floor, w, text)
			}
		}
	}
}

// The ceiling note holds the reference client's batched claims against the
// goal: under it, out of reach; over it, the gap is the store's.
func TestCeilingNoteTellsReachFromTheBatchedReference(t *testing.T) {
	for _, c := range []struct {
		batched float64
		want    string
	}{
		{batched: 15_000, want: "1.500 x pgbench (10000/s)"},
		{batched: 30_000, want: "3.000 x pgbench (10000/s)"},
	} {
		rep := &Report{
			Results: []Result{{Name: PostgresCalls, Samples: []Samples{
				oneRound("pgbench", 10_000),
				oneRound(StoreClaimsContender, 12_000),
				oneRound(PgbenchBatchedContender, c.batched),
			}}},
			Verdicts: []Verdict{
				{Target: Target{Name: PostgresBatchedClaims, Comparison: PostgresCalls, Of: StoreClaimsContender, Over: "pgbench", Goal: 2}, Value: 1.2},
				{Target: Target{Name: "postgres-vs-pgbench", Comparison: PostgresCalls, Goal: 0.8}, Value: 0.5},
			},
		}
		lines, err := ceilingNote(PostgresBatchedClaims, PgbenchBatchedContender, fillOf(8, 6, 10), PostgresClients, 2)(context.Background(), rep)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 1 {
			t.Fatalf("batched %v: %d lines, want one for the missed target: %q", c.batched, len(lines), lines)
		}
		reach := "out of reach"
		if c.batched/10_000 >= 2 {
			reach = "within reach of the server"
		}
		for _, want := range []string{c.want, "the store reaches 12000 claims/s, 1.200 x (goal 2), its claim batches carrying 8.0 claims on average, of the 8 each of the 2 it keeps in flight can carry when all 16 callers wait (the ceiling sends all 16 in one)", reach} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("batched %v: note lacks %q:\n%s", c.batched, want, lines[0])
			}
		}
	}
}

// oneRound is the samples of a contender measured once, at v.
func oneRound(contender string, v float64) Samples {
	return Samples{Contender: contender, Values: []float64{v}, Median: v}
}

// fillOf is a BatchFill whose rounds each sent claim batches averaging the
// given sizes.
func fillOf(means ...int) *BatchFill {
	f := &BatchFill{}
	for _, m := range means {
		f.Observe("claim", m-1)
		f.Observe("claim", m+1)
		f.EndRound()
	}
	return f
}

// A BatchFill's median is over the rounds' mean claim batches: completes
// and rounds that sent no claim batch are left out.
func TestBatchFillMediansRoundMeans(t *testing.T) {
	f := fillOf(4, 12)
	f.Observe("complete", 64)
	f.EndRound() // no claim batch: no round
	f.Observe("claim", 1)
	f.Observe("claim", 2)
	f.Observe("claim", 6)
	f.EndRound() // 3
	if got, ok := f.Median(); !ok || got != 4 {
		t.Fatalf("median of the rounds 4, 12 and 3 = %v, %v; want 4", got, ok)
	}
	if _, ok := (*BatchFill)(nil).Median(); ok {
		t.Fatal("a nil BatchFill has a median")
	}
}
