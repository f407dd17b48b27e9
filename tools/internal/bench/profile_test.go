package bench

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"
)

// Prepare runs once, before the rounds; a CPUOnly workload gets the CPU
// profile's finding alone.
func TestProfileWorkloadPreparesAndTakesTheCPUProfileAlone(t *testing.T) {
	var prepared, rounds int
	w := Profiled{
		Name:    "hashing",
		Prepare: func(context.Context) error { prepared++; return nil },
		Round: func(context.Context) (float64, error) {
			if prepared != 1 {
				t.Errorf("a round ran with Prepare run %d times", prepared)
			}
			rounds++
			sum := sha256.Sum256(nil)
			for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
				sum = sha256.Sum256(sum[:])
			}
			return 1, nil
		},
		CPUOnly: true,
	}
	fs, err := ProfileWorkload(t.Context(), w, 100*time.Millisecond, 3)
	if err != nil {
		t.Fatal(err)
	}
	if prepared != 1 || rounds == 0 {
		t.Errorf("prepared %d times, %d rounds", prepared, rounds)
	}
	if len(fs) != 1 || fs[0].Profile != "cpu" || fs[0].Workload != "hashing" || len(fs[0].Top) == 0 {
		t.Errorf("findings %+v, want the CPU profile's alone", fs)
	}
}
