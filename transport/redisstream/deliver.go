package redisstream

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// deliver hands entry out, and again ResendInterval after each nack,
// until its handler acks it, then queues its XACK; or until ctx ends,
// leaving the entry pending for releasePending. Each hand-out is a
// message whose context ends once it is acked or nacked, or with ctx. Its
// slot is free once it returns.
func (c *subscription) deliver(ctx context.Context, entry redis.XMessage) {
	defer c.free.give(1)
	defer c.drop(entry.ID)
	msg, _ := streamUnmarshaller{}.Unmarshal(entry.Values) // never fails
	for {
		acked, ok := c.handOut(ctx, msg)
		switch {
		case !ok:
			return
		case acked:
			c.acks.add(ctx, entry.ID)
			return
		}
		msg = msg.Copy()
		if !pause(ctx, c.conf.ResendInterval) {
			return
		}
	}
}

// handOut sends msg to the subscription's channel and waits for its ack
// or nack. ok is false if ctx ended first: then msg was not handed out,
// or its handler has not settled it yet.
func (c *subscription) handOut(ctx context.Context, msg *message.Message) (acked, ok bool) {
	if ctx.Err() != nil { // a ready receiver must not win against the end
		return false, false
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msg.SetContext(mctx)
	select {
	case c.out <- msg:
	case <-ctx.Done():
		return false, false
	}
	select {
	case <-msg.Acked():
		return true, true
	case <-msg.Nacked():
		return false, true
	case <-ctx.Done():
		select {
		case <-msg.Acked(): // at the same moment: the ack counts
			return true, true
		default:
			return false, false
		}
	}
}

// slots are a subscription's free in-flight slots, as tokens: an entry
// takes one from its read until its delivery returns.
type slots chan struct{}

// newSlots returns n free slots.
func newSlots(n int) slots {
	s := make(slots, n)
	s.give(n)
	return s
}

// take waits for a free slot and takes it with every other free one, and
// returns how many it took: 0 if ctx ended first.
func (s slots) take(ctx context.Context) int {
	if ctx.Err() != nil {
		return 0
	}
	select {
	case <-s:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for {
		select {
		case <-s:
			n++
		default:
			return n
		}
	}
}

// give frees n slots.
func (s slots) give(n int) {
	for range n {
		s <- struct{}{}
	}
}
