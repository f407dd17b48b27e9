package kafka

import (
	"fmt"
	"testing"
)

// lanesOf returns lanes holding the messages of keys, one per key in
// order, at offsets from 10 on.
func lanesOf(t *testing.T, window int, keys ...string) (*partitionLanes, map[int64]*laneEntry) {
	t.Helper()
	p := newPartitionLanes(window)
	for i, k := range keys {
		p.add(int64(10+i), k, nil)
	}
	return p, map[int64]*laneEntry{}
}

// takeAll takes every message ready and returns their offsets.
func takeAll(p *partitionLanes, taken map[int64]*laneEntry) []int64 {
	var offsets []int64
	for e := p.take(); e != nil; e = p.take() {
		taken[e.offset] = e
		offsets = append(offsets, e.offset)
	}
	return offsets
}

func wantMark(t *testing.T, p *partitionLanes, want int64) {
	t.Helper()
	if got, ok := p.mark(); !ok || got != want {
		t.Fatalf("mark = %d, %v; want %d", got, ok, want)
	}
}

func wantTaken(t *testing.T, got []int64, want ...int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("handed out offsets %v, want %v", got, want)
	}
}

// The offset marked is the lowest one not acked, however the acks come.
func TestKafkaLanesMarkLowestUnacked(t *testing.T) {
	if _, ok := newPartitionLanes(10).mark(); ok {
		t.Fatal("a mark before any message was read")
	}
	p, taken := lanesOf(t, 10, "a", "b", "c", "d", "e")
	wantTaken(t, takeAll(p, taken), 10, 11, 12, 13, 14)
	wantMark(t, p, 10)
	for _, step := range []struct {
		ack  int64
		mark int64
	}{{12, 10}, {13, 10}, {10, 11}, {14, 11}, {11, 15}} {
		p.ack(taken[step.ack])
		wantMark(t, p, step.mark)
	}
	if p.inFlight() != 0 || len(p.order) != 0 || len(p.lanes) != 0 {
		t.Errorf("after every ack: %d in flight, %d held, %d lanes; want none", p.inFlight(), len(p.order), len(p.lanes))
	}
	if p.ack(taken[11]) {
		t.Error("a second ack of one message counted")
	}
}

// A key's messages are handed out one at a time in offset order; other
// keys go past them.
func TestKafkaLanesSerialiseAKey(t *testing.T) {
	p, taken := lanesOf(t, 10, "a", "a", "b", "a", "c")
	wantTaken(t, takeAll(p, taken), 10, 12, 14)
	p.ack(taken[12])
	wantTaken(t, takeAll(p, taken)) // b had one message; a waits for 10
	p.ack(taken[10])
	wantTaken(t, takeAll(p, taken), 11)
	wantMark(t, p, 11)
	p.ack(taken[11])
	wantTaken(t, takeAll(p, taken), 13)
	wantMark(t, p, 13)
	p.ack(taken[14])
	p.ack(taken[13])
	wantMark(t, p, 15)
}

// A nacked message is its key's next again, ahead of the key's later
// messages, and holds the mark until it is acked.
func TestKafkaLanesNackRedeliversInOrder(t *testing.T) {
	p, taken := lanesOf(t, 10, "a", "a", "b")
	wantTaken(t, takeAll(p, taken), 10, 12)
	if !p.nacked(taken[10]) || p.nacked(taken[10]) {
		t.Fatal("nacked reports the first nack only")
	}
	p.ack(taken[12])
	wantTaken(t, takeAll(p, taken)) // 10 waits to be retried, 11 behind it
	wantMark(t, p, 10)
	p.retry(taken[10])
	wantTaken(t, takeAll(p, taken), 10)
	p.ack(taken[10])
	wantTaken(t, takeAll(p, taken), 11)
	p.ack(taken[11])
	wantMark(t, p, 13)
}

// The partition holds at most window messages from its lowest unacked
// offset on, the acked ones included.
func TestKafkaLanesWindow(t *testing.T) {
	p, taken := lanesOf(t, 3, "a", "b", "c")
	if !p.full() {
		t.Fatal("3 messages in a window of 3: not full")
	}
	takeAll(p, taken)
	p.ack(taken[11])
	p.ack(taken[12])
	if !p.full() {
		t.Fatal("offset 10 unacked: the window must not move")
	}
	p.ack(taken[10])
	if p.full() {
		t.Fatal("every message acked: the window is empty")
	}
	wantMark(t, p, 13)
}
