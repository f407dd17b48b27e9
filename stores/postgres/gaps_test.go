package postgres

import (
	"slices"
	"testing"
	"time"
)

func TestGapsCutAtWidthAndPartitionBounds(t *testing.T) {
	h := func(n float64) time.Time {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n * float64(time.Hour)))
	}
	parts := []Partition{
		{From: h(2), To: h(3)},
		{From: h(3.5), To: h(28)}, // a migration's first partition: unaligned, a day long
	}
	got := gaps(parts, h(0.25), h(30), time.Hour)
	want := [][2]time.Time{
		{h(0), h(1)}, {h(1), h(2)}, // from is rounded down to a multiple of width
		{h(3), h(3.5)}, // cut at the next partition's start
		{h(28), h(29)}, {h(29), h(30)},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("gaps =\n%v\nwant\n%v", got, want)
	}
	if g := gaps(parts, h(2.5), h(3), time.Hour); len(g) != 0 {
		t.Fatalf("gaps inside one partition = %v, want none", g)
	}
}
