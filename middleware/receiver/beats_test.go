package receiver

import (
	"testing"
	"time"
)

// The beats keep exactly the heartbeats added and not yet removed, whatever
// the order of removal.
func TestBeatsListsTheHeartbeatsInFlight(t *testing.T) {
	inFlight := func(b *beats) []*heartbeat {
		var hs []*heartbeat
		for h := b.first; h != nil; h = h.next {
			hs = append(hs, h)
		}
		return hs
	}
	b := newBeats(time.Hour)
	defer func() {
		if b.timer != nil {
			b.timer.Stop()
		}
	}()
	hs := make([]*heartbeat, 4)
	for i := range hs {
		hs[i] = &heartbeat{}
		b.add(hs[i], time.Now())
	}
	for _, step := range []struct {
		remove int
		want   []int
	}{{2, []int{3, 1, 0}}, {3, []int{1, 0}}, {0, []int{1}}, {1, nil}} {
		b.remove(hs[step.remove])
		got := inFlight(b)
		if len(got) != len(step.want) {
			t.Fatalf("after removing %d: %d in flight, want %v", step.remove, len(got), step.want)
		}
		for i, w := range step.want {
			if got[i] != hs[w] {
				t.Fatalf("after removing %d: in flight[%d] is not heartbeat %d", step.remove, i, w)
			}
		}
	}
}
