package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
)

// claimDispatch is one partition's dispatch, owned by its ConsumeClaim.
type claimDispatch struct {
	h     *claims
	sess  sarama.ConsumerGroupSession
	claim sarama.ConsumerGroupClaim
	ctx   context.Context // the messages' contexts derive from it
	lanes *partitionLanes
	slots chan struct{}                   // a slot is taken by sending, freed by receiving
	held  bool                            // a slot is taken for the next message to hand out
	out   map[*laneEntry]*message.Message // handed out, not settled
	// cancels ends the context of each message read or resent and not
	// handed out yet; once out, its watcher ends it.
	cancels map[*message.Message]context.CancelFunc

	settled chan settlement // acks and nacks, from the watchers
	retries chan *laneEntry // nacked messages due again
	marked  int64
}

// settlement is the router's verdict on a message handed out.
type settlement struct {
	e     *laneEntry
	acked bool
}

// run reads, hands out and settles until the claim or the subscription
// ends.
func (d *claimDispatch) run() error {
	sessionDone := d.sess.Context().Done()
	for {
		var read <-chan *sarama.ConsumerMessage
		if !d.lanes.full() {
			read = d.claim.Messages()
		}
		var take chan<- struct{}
		var send chan<- *message.Message
		var next *message.Message
		if e := d.lanes.peek(); e != nil && d.held {
			send, next = d.h.out, e.msg
		} else if e != nil {
			take = d.slots
		}
		select {
		case km, ok := <-read:
			if !ok {
				d.wait()
				return nil
			}
			if err := d.read(km); err != nil {
				d.wait()
				return err
			}
		case take <- struct{}{}:
			d.held = true
		case send <- next:
			d.held = false
			e := d.lanes.take()
			d.out[e] = next
			cancel := d.cancels[next]
			delete(d.cancels, next)
			go d.watch(e, next, cancel)
		case s := <-d.settled:
			d.settle(s, true)
		case e := <-d.retries:
			d.lanes.retry(e)
		case <-sessionDone:
			d.wait()
			return nil
		case <-d.h.ctx.Done():
			d.settleArrived()
			return nil
		}
	}
}

// read takes in a message read from the partition, keyed by its Kafka
// key (the message UUID when it has none).
func (d *claimDispatch) read(km *sarama.ConsumerMessage) error {
	msg, err := d.h.unmarshal.Unmarshal(km)
	if err != nil {
		return fmt.Errorf("unmarshaling offset %d of %s/%d: %w", km.Offset, km.Topic, km.Partition, err)
	}
	key := string(km.Key)
	if key == "" {
		key = msg.UUID
	}
	d.setContext(msg, position{Partition: km.Partition, Offset: km.Offset})
	d.lanes.add(km.Offset, key, msg)
	return nil
}

// setContext gives msg a context of its own, carrying pos and ending with
// the dispatch or once msg is acked or nacked, as a Watermill message's
// does.
func (d *claimDispatch) setContext(msg *message.Message, pos position) {
	ctx, cancel := context.WithCancel(context.WithValue(d.ctx, positionKey{}, pos))
	msg.SetContext(ctx)
	d.cancels[msg] = cancel
}

// watch reports the router's verdict on m, the handing out of e, until
// the dispatch ends, and ends m's context (cancel) once it has one.
func (d *claimDispatch) watch(e *laneEntry, m *message.Message, cancel context.CancelFunc) {
	var s settlement
	select {
	case <-m.Acked():
		s = settlement{e: e, acked: true}
	case <-m.Nacked():
		s = settlement{e: e}
	case <-d.ctx.Done():
		return
	}
	cancel()
	select {
	case d.settled <- s:
	case <-d.ctx.Done():
	}
}

// settle records a verdict and frees its slot. An ack marks the
// partition's lowest unacked offset; a nack makes a fresh copy of the
// message due again after the resend pause, when resend is true.
func (d *claimDispatch) settle(s settlement, resend bool) {
	delete(d.out, s.e)
	if s.acked {
		if d.lanes.ack(s.e) {
			<-d.slots
			d.mark()
		}
		return
	}
	if !d.lanes.nacked(s.e) {
		return
	}
	<-d.slots
	if !resend {
		return
	}
	again := s.e.msg.Copy()
	pos, _ := positionFromCtx(s.e.msg.Context())
	d.setContext(again, pos)
	s.e.msg = again
	time.AfterFunc(d.h.resend, func() {
		select {
		case d.retries <- s.e:
		case <-d.ctx.Done():
		}
	})
}

// mark marks the lowest unacked offset, when it advanced.
func (d *claimDispatch) mark() {
	offset, ok := d.lanes.mark()
	if !ok || offset <= d.marked {
		return
	}
	d.marked = offset
	d.sess.MarkOffset(d.claim.Topic(), d.claim.Partition(), offset, "")
	if d.h.commit {
		d.sess.Commit()
	}
}
