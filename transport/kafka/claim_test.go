package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// The partition dispatch on its own, with sarama's session and claim
// played by the test, in a synctest bubble: every step is taken once the
// dispatch has nothing left to do, so the outcomes are deterministic.

// fakeSession records the offsets marked; its context ends with the
// session.
type fakeSession struct {
	sarama.ConsumerGroupSession // the methods the dispatch does not call
	ctx                         context.Context
	mu                          sync.Mutex
	marks                       []int64
}

func (s *fakeSession) Context() context.Context { return s.ctx }

func (s *fakeSession) MarkOffset(_ string, _ int32, offset int64, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, offset)
}

// marked returns the last offset marked, -1 for none.
func (s *fakeSession) marked() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.marks) == 0 {
		return -1
	}
	return s.marks[len(s.marks)-1]
}

// fakeClaim is partition 0 of topic "t", its messages sent by the test.
type fakeClaim struct {
	sarama.ConsumerGroupClaim
	msgs chan *sarama.ConsumerMessage
}

func (c *fakeClaim) Topic() string                            { return "t" }
func (c *fakeClaim) Partition() int32                         { return 0 }
func (c *fakeClaim) Messages() <-chan *sarama.ConsumerMessage { return c.msgs }

// claimRun is one ConsumeClaim under test.
type claimRun struct {
	t          *testing.T
	sess       *fakeSession
	claim      *fakeClaim
	out        chan *message.Message
	endSession context.CancelFunc
	done       chan error
}

// startClaim runs ConsumeClaim of h (made with out) on a new session
// and claim.
func startClaim(t *testing.T, h *claims, out chan *message.Message) *claimRun {
	t.Helper()
	ctx, cancel := context.WithCancel(h.ctx)
	r := &claimRun{t: t, sess: &fakeSession{ctx: ctx}, claim: &fakeClaim{msgs: make(chan *sarama.ConsumerMessage)},
		out: out, endSession: cancel, done: make(chan error, 1)}
	go func() { r.done <- h.ConsumeClaim(r.sess, r.claim) }()
	return r
}

// testClaims is the handler of a subscription with inFlight slots, until
// stop is called; its drain limit is 10 s.
func testClaims(inFlight int) (h *claims, out chan *message.Message, stop context.CancelFunc) {
	ctx, stop := context.WithCancel(context.Background())
	out = make(chan *message.Message)
	sc := sarama.NewConfig()
	sc.Consumer.Group.Rebalance.Timeout = 12500 * time.Millisecond
	return newClaims(ctx, out, inFlight, sc, watermill.NopLogger{}), out, stop
}

// send feeds the claim the messages at offsets from `from` on, keyed by
// keys, their UUIDs "m<offset>".
func (r *claimRun) send(from int64, keys ...string) {
	for i, k := range keys {
		offset := from + int64(i)
		r.claim.msgs <- &sarama.ConsumerMessage{Topic: "t", Offset: offset, Key: []byte(k), Value: []byte(k),
			Headers: []*sarama.RecordHeader{{Key: []byte(wmkafka.UUIDHeaderKey), Value: []byte(fmt.Sprintf("m%d", offset))}}}
	}
}

// receive returns the messages handed out, once the dispatch has no more
// to hand out, by UUID.
func (r *claimRun) receive() map[string]*message.Message {
	got := map[string]*message.Message{}
	for {
		synctest.Wait()
		select {
		case m := <-r.out:
			got[m.UUID] = m
		default:
			return got
		}
	}
}

func (r *claimRun) wantReceived(want ...string) map[string]*message.Message {
	r.t.Helper()
	got := r.receive()
	if len(got) != len(want) {
		r.t.Fatalf("handed out %v, want %v", keysOf(got), want)
	}
	for _, id := range want {
		if got[id] == nil {
			r.t.Fatalf("handed out %v, want %v", keysOf(got), want)
		}
	}
	return got
}

func (r *claimRun) wantMarked(offset int64) {
	r.t.Helper()
	synctest.Wait()
	if got := r.sess.marked(); got != offset {
		r.t.Fatalf("marked %d, want %d", got, offset)
	}
}

func (r *claimRun) running() bool {
	synctest.Wait()
	select {
	case err := <-r.done:
		r.done <- err
		return false
	default:
		return true
	}
}

func keysOf(m map[string]*message.Message) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// Keys are out in parallel, each key one message at a time, and acks out
// of order mark no further than the lowest unacked offset.
func TestKafkaClaimDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(8)
		defer stop()
		r := startClaim(t, h, out)
		r.send(0, "a", "b", "a", "c")
		got := r.wantReceived("m0", "m1", "m3")
		got["m3"].Ack()
		got["m1"].Ack()
		r.wantMarked(0) // m0 unacked
		r.wantReceived()
		got["m0"].Ack()
		r.wantMarked(2)
		got = r.wantReceived("m2")
		got["m2"].Ack()
		r.wantMarked(4)
		if pos, ok := positionFromCtx(got["m2"].Context()); !ok || pos.Offset != 2 {
			t.Errorf("message context holds %+v, %v; want offset 2", pos, ok)
		}
	})
}

// A nacked message comes back after the resend pause, a copy with the
// same UUID, before its key's next message; other keys go on meanwhile.
func TestKafkaClaimNackRedelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(8)
		defer stop()
		r := startClaim(t, h, out)
		r.send(0, "a", "a")
		r.wantReceived("m0")["m0"].Nack()
		r.send(2, "b")
		r.wantReceived("m2")["m2"].Ack()
		r.wantMarked(0)
		time.Sleep(resendDelay)
		again := r.wantReceived("m0")["m0"]
		if string(again.Payload) != "a" {
			t.Errorf("redelivered payload %q, want %q", again.Payload, "a")
		}
		again.Ack()
		r.wantReceived("m1")["m1"].Ack()
		r.wantMarked(3)
	})
}

// A message's context lives while it is out and ends once it is acked or
// nacked, as a Watermill message's does; the copy handed out after a nack
// has a live context of its own, at the same position.
func TestKafkaClaimMessageContextEndsWithItsVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(8)
		defer stop()
		r := startClaim(t, h, out)
		r.send(0, "a", "b")
		got := r.wantReceived("m0", "m1")
		for _, m := range got {
			if m.Context().Err() != nil {
				t.Fatalf("the context of %s, out, has ended", m.UUID)
			}
		}
		got["m0"].Nack()
		got["m1"].Ack()
		synctest.Wait()
		for _, m := range got {
			if m.Context().Err() == nil {
				t.Errorf("the context of %s has not ended with its verdict", m.UUID)
			}
		}
		time.Sleep(resendDelay)
		again := r.wantReceived("m0")["m0"]
		if again.Context().Err() != nil {
			t.Error("the context of the copy handed out after the nack has ended")
		}
		if pos, ok := positionFromCtx(again.Context()); !ok || pos.Offset != 0 {
			t.Errorf("the copy's context holds %+v, %v; want offset 0", pos, ok)
		}
		again.Ack()
		synctest.Wait()
		if again.Context().Err() == nil {
			t.Error("the context of the copy has not ended with its ack")
		}
	})
}

// At most inFlight messages are out across the partitions of a
// subscription.
func TestKafkaClaimSharesTheSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(3)
		defer stop()
		p0, p1 := startClaim(t, h, out), startClaim(t, h, out)
		p0.send(0, "a", "b")
		p1.send(10, "c", "d")
		got := p0.receive()
		if len(got) != 3 {
			t.Fatalf("%d messages out, want the 3 slots used", len(got))
		}
		for _, m := range got {
			m.Ack()
		}
		if got := p0.receive(); len(got) != 1 {
			t.Fatalf("after 3 acks %d more out, want the last one", len(got))
		}
	})
}

// With inFlight 1, each partition has one message out at a time, as
// watermill-kafka's subscriber has.
func TestKafkaClaimOneInFlightPerPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(1)
		defer stop()
		p0, p1 := startClaim(t, h, out), startClaim(t, h, out)
		go p0.send(0, "a", "b")
		go p1.send(10, "c", "d")
		got := p0.receive()
		if len(got) != 2 {
			t.Fatalf("%d messages out, want one per partition", len(got))
		}
	})
}

// When the session ends, nothing more is handed out, the messages out
// are waited for, and the dispatch ends once they are settled, having
// marked the lowest unacked offset.
func TestKafkaClaimRebalanceWaitsForMessagesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(8)
		defer stop()
		r := startClaim(t, h, out)
		r.send(0, "a", "b", "c", "a")
		got := r.wantReceived("m0", "m1", "m2")
		got["m1"].Ack()
		r.endSession()
		if !r.running() {
			t.Fatal("the dispatch ended with messages out")
		}
		got["m0"].Ack() // m3, behind it, stays unsent
		got["m2"].Nack()
		if r.running() {
			t.Fatal("the dispatch goes on after every message out was settled")
		}
		r.wantReceived()
		r.wantMarked(2)
	})
}

// The wait for messages out after the session ends is bounded: they are
// left to the partition's next owner.
func TestKafkaClaimRebalanceWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(8)
		defer stop()
		r := startClaim(t, h, out)
		r.send(0, "a", "b")
		got := r.wantReceived("m0", "m1")
		got["m1"].Ack()
		start := time.Now()
		r.endSession()
		<-r.done
		if waited := time.Since(start); waited != h.drain {
			t.Errorf("waited %v for the message out, want %v", waited, h.drain)
		}
		r.wantMarked(0)
		if got["m0"].Context().Err() == nil {
			t.Error("the context of the message given up on has not ended")
		}
	})
}

// Ending the subscription ends the dispatch at once: the acked prefix is
// marked, what is out is not, and its context ends.
func TestKafkaClaimStopMarksNothingOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, out, stop := testClaims(8)
		r := startClaim(t, h, out)
		r.send(0, "a", "b", "c")
		got := r.wantReceived("m0", "m1", "m2")
		got["m0"].Ack()
		got["m2"].Ack()
		stop()
		if r.running() {
			t.Fatal("the dispatch waits for a message out after the subscription ended")
		}
		r.wantMarked(1)
		if got["m1"].Context().Err() == nil {
			t.Error("the context of the message out has not ended")
		}
	})
}
