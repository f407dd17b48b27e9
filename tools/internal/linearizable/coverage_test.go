package linearizable

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// A run that has not covered by Duration what Run checks goes on until it
// has, whatever the pace: an owner's lease that ended, driven on purpose,
// and what Config.Covered asks; and no further than Config.CoverCalls.
func TestRunCoversWhatDurationMissed(t *testing.T) {
	t.Run("an owner's lease ended", func(t *testing.T) {
		// Over before the first call: every call comes past Duration.
		cfg := Config{Duration: time.Nanosecond, Seed: 1}.withDefaults()
		h := record(newToyStore(honest), cfg)
		if h.ownerLeasesEnded == 0 || h.overtime == 0 || h.overtime >= cfg.CoverCalls {
			t.Fatalf("%d owners' leases ended in %d calls past Duration, want some within %d",
				h.ownerLeasesEnded, h.overtime, cfg.CoverCalls)
		}
		if v := check(h, cfg); v.result != porcupine.Ok {
			t.Fatalf("check = %v, want Ok", v.result)
		}
	})
	t.Run("Covered", func(t *testing.T) {
		var asked atomic.Int64
		cfg := Config{Duration: time.Nanosecond, Seed: 2, Covered: func() bool { return asked.Add(1) > 50 }}.withDefaults()
		h := record(newToyStore(honest), cfg)
		if asked.Load() <= 50 || h.ownerLeasesEnded == 0 || h.overtime >= cfg.CoverCalls {
			t.Fatalf("Covered asked %d times, %d owners' leases ended in %d calls past Duration; want it covered within %d",
				asked.Load(), h.ownerLeasesEnded, h.overtime, cfg.CoverCalls)
		}
	})
	t.Run("bounded by CoverCalls", func(t *testing.T) {
		cfg := Config{Duration: time.Nanosecond, Seed: 3, CoverCalls: 40, Covered: func() bool { return false }}.withDefaults()
		if h := record(newToyStore(honest), cfg); h.overtime != cfg.CoverCalls {
			t.Fatalf("%d calls past Duration, want CoverCalls (%d)", h.overtime, cfg.CoverCalls)
		}
	})
}
