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
