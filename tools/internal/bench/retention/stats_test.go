package retention

import (
	"testing"
	"time"
)

func TestP99AndMedian(t *testing.T) {
	lat := make([]time.Duration, 200)
	for i := range lat {
		lat[len(lat)-1-i] = time.Duration(i+1) * time.Millisecond // unsorted input
	}
	if got := p99(lat); got != 198*time.Millisecond {
		t.Errorf("p99 of 1..200 ms = %v, want 198ms", got)
	}
	if lat[0] != 200*time.Millisecond {
		t.Error("p99 sorted its input in place")
	}
	if got := p99([]time.Duration{7}); got != 7 {
		t.Errorf("p99 of one = %v, want it", got)
	}
	if p99(nil) != 0 || median(nil) != 0 {
		t.Error("empty input does not give zero")
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3,1,2 = %v, want 2", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4,1,3,2 = %v, want 2.5", got)
	}
}

func TestClaimsRatioIsPerWindow(t *testing.T) {
	// Two sweeping windows of 100 claims each, three idle ones of 100.
	r := Result{Options: Options{Windows: 2}, IdleWindows: 3, IdleClaims: 300, SweepClaims: 200}
	if got := r.ClaimsRatio(); got != 1 {
		t.Errorf("ClaimsRatio of as many claims per window = %v, want 1", got)
	}
	// With churn windows: two more idle ones, of 100 claims too.
	r.IdleWindows, r.IdleClaims = 5, 500
	if got := r.ClaimsRatio(); got != 1 {
		t.Errorf("ClaimsRatio with churn windows' idle neighbours = %v, want 1", got)
	}
	if got := (Result{}).ClaimsRatio(); got != 0 {
		t.Errorf("ClaimsRatio of no round = %v, want 0", got)
	}
}
