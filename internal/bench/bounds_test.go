package bench

import (
	"context"
	"strings"
	"testing"
)

// The memory bound comes from the store pairs and the fingerprints timed in
// the router's own rounds: 1 / (1 + none x (pair + fingerprint)).
func TestMemoryBoundUsesTheRoutersRounds(t *testing.T) {
	rep := &Report{
		Results: []Result{{Name: RouterMemory, Samples: []Samples{
			{Contender: "none", Median: 200_000},   // 5µs a message
			{Contender: "memory", Median: 150_000}, // measured 0.75
			{Contender: "deduplicator", Median: 180_000},
			{Contender: StorePairsContender, Median: 1_000_000},   // 1µs a pair
			{Contender: FingerprintsContender, Median: 4_000_000}, // 250ns a fingerprint
		}}},
		Verdicts: []Verdict{{Target: Target{Name: "memory-vs-none", Comparison: RouterMemory, Goal: 0.9}, Value: 0.75}},
	}
	lines, err := memoryBound(context.Background(), rep)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	// 1 / (1 + 200,000 x 1.25µs) = 0.8, under the goal 0.9.
	for _, want := range []string{"takes 5µs per message", "alone takes 1µs (one caller, fresh keys, in the same rounds)",
		"fingerprint 250ns", "at most 0.800 (measured 0.750)", "out of reach"} {
		if !strings.Contains(text, want) {
			t.Errorf("bound lacks %q:\n%s", want, text)
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
				{Contender: "pgbench", Median: 10_000},
				{Contender: StoreClaimsContender, Median: 12_000},
				{Contender: PgbenchBatchedContender, Median: c.batched},
			}}},
			Verdicts: []Verdict{
				{Target: Target{Name: PostgresMoonshot, Comparison: PostgresCalls, Of: StoreClaimsContender, Over: "pgbench", Goal: 2}, Value: 1.2},
				{Target: Target{Name: "postgres-vs-pgbench", Comparison: PostgresCalls, Goal: 0.8}, Value: 0.5},
			},
		}
		lines, err := ceilingNote(PostgresMoonshot, PgbenchBatchedContender)(context.Background(), rep)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 1 {
			t.Fatalf("batched %v: %d lines, want one for the missed moonshot: %q", c.batched, len(lines), lines)
		}
		reach := "out of reach"
		if c.batched/10_000 >= 2 {
			reach = "within reach of the server"
		}
		for _, want := range []string{c.want, "the store reaches 12000 claims/s, 1.200 x (goal 2)", reach} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("batched %v: note lacks %q:\n%s", c.batched, want, lines[0])
			}
		}
	}
}
