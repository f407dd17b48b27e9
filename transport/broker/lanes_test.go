package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// fakeLanes hands out channels the test feeds, one per subscribe call, and
// fails the call numbered failAt (from 1; 0: none).
type fakeLanes struct {
	lanes  []chan *message.Message
	ctxs   []context.Context
	failAt int
}

func (f *fakeLanes) subscribe(ctx context.Context) (<-chan *message.Message, error) {
	if len(f.ctxs)+1 == f.failAt {
		return nil, errors.New("no more lanes")
	}
	ch := make(chan *message.Message)
	f.lanes = append(f.lanes, ch)
	f.ctxs = append(f.ctxs, ctx)
	return ch, nil
}

// Every lane's messages come out of the one channel, which closes once
// the last lane's has.
func TestSubscribeLanesMerges(t *testing.T) {
	var f fakeLanes
	out, _, err := subscribeLanes(t.Context(), 3, f.subscribe, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.lanes) != 3 {
		t.Fatalf("%d lanes opened, want 3", len(f.lanes))
	}
	sent := map[string]bool{}
	for _, lane := range f.lanes {
		m := message.NewMessage(watermill.NewUUID(), nil)
		sent[m.UUID] = true
		go func() { lane <- m }()
	}
	for range len(f.lanes) {
		select {
		case m := <-out:
			if !sent[m.UUID] {
				t.Errorf("got %s, not a message a lane delivered", m.UUID)
			}
			delete(sent, m.UUID)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d messages still not merged after 5s", len(sent))
		}
	}
	close(f.lanes[0])
	close(f.lanes[1])
	select {
	case m, open := <-out:
		t.Fatalf("got %v (open %v) while a lane is still open", m, open)
	default:
	}
	close(f.lanes[2])
	select {
	case _, open := <-out:
		if open {
			t.Fatal("a message after every lane closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still open 5s after every lane closed")
	}
}

// ended runs once every lane has closed, and the channel closes only
// after it returned: a subscription hands back what its lanes left before
// its end is seen.
func TestSubscribeLanesEndedBeforeClosing(t *testing.T) {
	var f fakeLanes
	called, release := make(chan struct{}), make(chan struct{})
	out, closed, err := subscribeLanes(t.Context(), 2, f.subscribe, func() {
		close(called)
		<-release
	})
	if err != nil {
		t.Fatal(err)
	}
	close(f.lanes[0])
	select {
	case <-called:
		t.Fatal("ended ran while a lane is open")
	case <-time.After(50 * time.Millisecond):
	}
	close(f.lanes[1])
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("ended not run 5s after every lane closed")
	}
	select {
	case <-out:
		t.Fatal("the channel closed before ended returned")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("not closed 5s after ended returned")
	}
	select {
	case _, open := <-out:
		if open {
			t.Fatal("a message after every lane closed")
		}
	default:
		t.Fatal("closed signalled before the channel closed")
	}
}

// End ends every subscription, even one with a message it cannot hand
// out (nacked instead), runs their ended hooks and returns once their
// channels are closed; a subscriber closed that way subscribes no more.
func TestLaneSubscriptionsEnd(t *testing.T) {
	var (
		ls     Lanes
		f      fakeLanes
		handed bool
	)
	out, err := ls.Subscribe(t.Context(), 2, f.subscribe, func() { handed = true })
	if err != nil {
		t.Fatal(err)
	}
	m := message.NewMessage(watermill.NewUUID(), nil)
	f.lanes[0] <- m // taken by its lane, which nobody reads
	go func() {
		<-f.ctxs[0].Done() // the lanes end with their context, as an adapter's do
		close(f.lanes[0])
		close(f.lanes[1])
	}()
	ended := make(chan struct{})
	go func() {
		ls.End()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("end has not returned after 5s")
	}
	select {
	case _, open := <-out:
		if open {
			t.Error("the subscription handed out a message after its end")
		}
	default:
		t.Error("the channel is still open after end returned")
	}
	select {
	case <-m.Nacked():
	default:
		t.Error("the message the lane held was not nacked")
	}
	if !handed {
		t.Error("end returned before the ended hook ran")
	}
	if _, err := ls.Subscribe(t.Context(), 1, f.subscribe, nil); err == nil {
		t.Error("subscribing after end succeeded")
	}
}

// A failed subscription ends the lanes already open, and nacks what they
// still deliver, so that their adapter hands it back.
func TestSubscribeLanesFailure(t *testing.T) {
	f := fakeLanes{failAt: 3}
	if _, _, err := subscribeLanes(t.Context(), 4, f.subscribe, nil); err == nil {
		t.Fatal("subscribing succeeded with a lane that failed")
	}
	for i, ctx := range f.ctxs {
		if ctx.Err() == nil {
			t.Errorf("lane %d: its context still runs", i+1)
		}
	}
	checkNacked(t, f.lanes[0])
}

// Once ctx ended, a message a lane still delivers is nacked, not handed
// out.
func TestSubscribeLanesEnded(t *testing.T) {
	var f fakeLanes
	ctx, cancel := context.WithCancel(t.Context())
	if _, _, err := subscribeLanes(ctx, 2, f.subscribe, nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	checkNacked(t, f.lanes[1])
}

// checkNacked delivers a message on lane and requires it nacked within 5s.
func checkNacked(t *testing.T, lane chan<- *message.Message) {
	t.Helper()
	m := message.NewMessage(watermill.NewUUID(), nil)
	select {
	case lane <- m:
	case <-time.After(5 * time.Second):
		t.Fatal("the lane's message not taken within 5s")
	}
	select {
	case <-m.Nacked():
	case <-m.Acked():
		t.Fatal("acked, want nacked")
	case <-time.After(5 * time.Second):
		t.Fatal("not nacked within 5s")
	}
}
