package linearizable

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// Report sums up a run of Run.
type Report struct {
	// Calls is how many calls the history holds.
	Calls int
	// Outcomes counts the calls by method and outcome, such as
	// "claim acquired", "complete lease lost" or "extend unknown".
	Outcomes map[string]int
	// Unsent is how many calls never reached the backend (Config.NotSent)
	// and were left out.
	Unsent int
	// OwnerLeasesEnded is how many owners' calls were refused because
	// their lease had ended or been taken over.
	OwnerLeasesEnded int
	// Overtime is how many of the calls came past Config.Duration, made
	// to cover what the run lacked (see Config.CoverCalls).
	Overtime int
	// Faults is how many faults were injected.
	Faults int
	// Recorded and Checked are how long recording and checking took.
	Recorded, Checked time.Duration
	// Result is porcupine's: Ok, Illegal, or Unknown when the check timed
	// out.
	Result porcupine.CheckResult
}

// String is the report on one line.
func (r Report) String() string {
	var outcomes []string
	for _, k := range slices.Sorted(maps.Keys(r.Outcomes)) {
		outcomes = append(outcomes, fmt.Sprintf("%s %d", k, r.Outcomes[k]))
	}
	return fmt.Sprintf("%s: %d calls in %v (%s; %d unsent; %d past Duration), %d owners' leases ended, %d faults, checked in %v",
		r.Result, r.Calls, r.Recorded.Round(time.Millisecond), strings.Join(outcomes, ", "),
		r.Unsent, r.Overtime, r.OwnerLeasesEnded, r.Faults, r.Checked.Round(time.Millisecond))
}

// Run drives s as cfg says, checks that the history is linearizable (see
// the package documentation for the model) and fails t if it is not,
// naming the file that visualises the history. It also fails t when a
// fault's Inject fails, or a call returns an error the contract does not
// name (neither one of its outcomes, nor ErrUnavailable, nor a context
// deadline), when the run saw no lease end under its owner, which would
// leave expiry unchecked (the clients drive that case past Duration until
// they meet it, within Config.CoverCalls), and when the check times out
// (Config.CheckTimeout), which leaves the history unchecked. It logs a
// Report and returns it.
func Run(t *testing.T, s stores.Store, cfg Config) Report {
	t.Helper()
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	h := record(s, cfg)
	for _, f := range h.faults {
		if f.err != nil {
			t.Errorf("fault %q: %v", f.name, f.err)
		}
		t.Logf("fault %q from %s for %s", f.name, ms(f.start), ms(f.end-f.start))
	}
	for _, e := range h.unexpected {
		t.Errorf("a call returned an error the contract does not name: %s", e)
	}
	if len(cfg.Faults) > 0 && len(h.faults) == 0 {
		t.Errorf("no fault was injected within %v: start them earlier", cfg.Duration)
	}
	v := check(h, cfg)
	rep := Report{
		Calls: len(h.ops), Outcomes: h.outcomes, Unsent: h.unsent, OwnerLeasesEnded: h.ownerLeasesEnded,
		Overtime: h.overtime, Faults: len(h.faults), Recorded: h.took, Checked: v.took, Result: v.result,
	}
	t.Logf("seed %d; %v", cfg.Seed, rep)
	if h.ownerLeasesEnded == 0 {
		t.Errorf("no lease ended under its owner in %d calls, %d of them past Duration to cover it: expiry went unchecked",
			rep.Calls, rep.Overtime)
	}
	switch v.result {
	case porcupine.Illegal:
		why := "no order of its calls fits the store model"
		if v.reused != "" {
			why = fmt.Sprintf("token %q was acquired twice", v.reused)
		}
		t.Logf("where the history stops fitting the model (times in ms since the run began):\n%s", explain(h, v))
		path, err := visualise(h, v, cfg.OutDir, t.Name())
		if err != nil {
			t.Errorf("history not linearizable: %s (%v)", why, err)
			break
		}
		t.Errorf("history not linearizable: %s; visualisation: %s", why, path)
	case porcupine.Unknown:
		t.Errorf("the check timed out after %v: the history went unchecked (calls of unknown outcome "+
			"widen the search; inject fewer faults or raise CheckTimeout)", cfg.CheckTimeout)
	}
	return rep
}
