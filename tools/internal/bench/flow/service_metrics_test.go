package flow

import (
	"math"
	"strings"
	"testing"
)

func TestParseClaimBatches(t *testing.T) {
	const metrics = `# HELP onceflow_store_batch_calls Calls each batch of the record store carried.
# TYPE onceflow_store_batch_calls histogram
onceflow_store_batch_calls_bucket{op="claim",le="1"} 3
onceflow_store_batch_calls_sum{op="claim"} 250
onceflow_store_batch_calls_count{op="claim"} 40
onceflow_store_batch_calls_sum{op="complete"} 900
onceflow_store_batch_calls_count{op="complete"} 10
onceflow_store_batch_calls_summary_sum{op="claim"} 7
`
	before, err := parseClaimBatches(strings.NewReader(metrics))
	if err != nil || before != (claimBatches{calls: 250, batches: 40}) {
		t.Fatalf("parseClaimBatches = %+v, %v", before, err)
	}
	after := claimBatches{calls: 250 + 96, batches: 40 + 12}
	if got := after.since(before); got != 8 {
		t.Errorf("mean claims per batch = %v, want 8", got)
	}
	if got := before.since(before); !math.IsNaN(got) {
		t.Errorf("no batch sent, yet a mean of %v", got)
	}
	none, err := parseClaimBatches(strings.NewReader("go_goroutines 12\n"))
	if err != nil || none != (claimBatches{}) {
		t.Errorf("without the metric: %+v, %v", none, err)
	}
	if _, err := parseClaimBatches(strings.NewReader(`onceflow_store_batch_calls_sum{op="claim"} x` + "\n")); err == nil {
		t.Error("a value that is not a number was accepted")
	}
}
