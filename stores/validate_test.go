package stores

import (
	"math"
	"testing"
	"time"
)

func TestMicrosRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{
		{time.Nanosecond, 1},
		{time.Microsecond, 1},
		{time.Microsecond + 1, 2},
		{time.Hour, 3_600_000_000},
		{math.MaxInt64, math.MaxInt64/1000 + 1},
	} {
		if got := Micros(tc.d); got != tc.want {
			t.Errorf("Micros(%d) = %d, want %d", tc.d, got, tc.want)
		}
	}
}
