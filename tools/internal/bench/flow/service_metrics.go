package flow

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// batchMetric is the histogram of the calls each batch of the service's
// record store carried (see app's batchMetrics).
const batchMetric = "onceflow_store_batch_calls"

// claimBatches is what an instance's record store sent of Claims so far:
// the calls its claim batches carried and how many batches.
type claimBatches struct{ calls, batches float64 }

// since is the mean claims per batch from b to a, NaN when none was sent.
func (a claimBatches) since(b claimBatches) float64 {
	if a.batches <= b.batches {
		return math.NaN()
	}
	return (a.calls - b.calls) / (a.batches - b.batches)
}

// scrapeClaimBatches reads the claim batches from the instance's /metrics
// at base.
func scrapeClaimBatches(ctx context.Context, base string) (claimBatches, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return claimBatches{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return claimBatches{}, fmt.Errorf("reading the service's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return claimBatches{}, fmt.Errorf("reading the service's metrics: %s", resp.Status)
	}
	return parseClaimBatches(resp.Body)
}

// parseClaimBatches reads the claim series of batchMetric's sum and count
// from metrics in the Prometheus text format; absent, they are zero (no
// batch was sent yet).
func parseClaimBatches(metrics io.Reader) (claimBatches, error) {
	var c claimBatches
	sc := bufio.NewScanner(metrics)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), "{")
		if !ok || (name != batchMetric+"_sum" && name != batchMetric+"_count") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(","+labels+",", `,op="claim",`) {
			continue
		}
		value, _, _ = strings.Cut(value, " ") // a timestamp may follow
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return claimBatches{}, fmt.Errorf("reading %s: %w", name, err)
		}
		if strings.HasSuffix(name, "_sum") {
			c.calls = v
		} else {
			c.batches = v
		}
	}
	return c, sc.Err()
}
