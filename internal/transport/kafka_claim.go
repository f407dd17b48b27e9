package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware"
)

// kafkaClaims is the [sarama.ConsumerGroupHandler] of one subscription: it
// hands each claimed partition's messages to out through a
// [partitionLanes], at most inFlight at once across the partitions (one
// per partition when inFlight <= 1), and marks the lowest unacked offset
// of each partition.
type kafkaClaims struct {
	// ctx is the subscription's: it ends when the subscriber closes or the
	// Subscribe context ends. The messages' contexts derive from it.
	ctx       context.Context
	out       chan<- *message.Message
	unmarshal kafka.Unmarshaler
	// shared holds a slot per message out, for all partitions together;
	// nil gives each partition a slot of its own.
	shared chan struct{}
	// window bounds each partition's messages from its lowest unacked
	// offset to the last read (see [partitionLanes]).
	window int
	// drain bounds the wait for messages out when a session ends.
	drain time.Duration
	// resend is the pause before a nacked message is handed out again.
	resend time.Duration
	// commit commits after every mark (for a configuration without
	// auto-commit).
	commit bool
	logger watermill.LoggerAdapter
}

// newKafkaClaims returns the handler of a subscription that hands out
// its messages on out, at most inFlight at once, while ctx lasts, with the
// consumer group configuration sc.
func newKafkaClaims(ctx context.Context, out chan<- *message.Message, inFlight int, sc *sarama.Config, logger watermill.LoggerAdapter) *kafkaClaims {
	h := &kafkaClaims{
		ctx: ctx, out: out, unmarshal: kafkaMarshaler(middleware.MetadataKey),
		window: max(inFlight, 1) * kafkaReadAhead,
		drain:  sc.Consumer.Group.Rebalance.Timeout * 4 / 5,
		resend: kafkaResendDelay,
		commit: !sc.Consumer.Offsets.AutoCommit.Enable,
		logger: logger,
	}
	if inFlight > 1 {
		h.shared = make(chan struct{}, inFlight)
	}
	return h
}

// Setup does nothing: the partitions are set up in ConsumeClaim.
func (h *kafkaClaims) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing: ConsumeClaim marked what it could.
func (h *kafkaClaims) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim dispatches one partition until its claim ends.
//
// When the session ends (a rebalance, the partition revoked) it hands out
// nothing more and waits for the messages out to be acked or nacked, at
// most h.drain, then returns; when the subscription ends (Close, or the
// Subscribe context) it returns at once. Either way the offset marked is
// the partition's lowest unacked, so whatever is out then is redelivered
// to whoever consumes the partition next.
func (h *kafkaClaims) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	ctx, cancel := context.WithCancel(h.ctx)
	slots := h.shared
	if slots == nil {
		slots = make(chan struct{}, 1)
	}
	d := &claimDispatch{
		h: h, sess: sess, claim: claim, ctx: ctx, slots: slots,
		lanes:   newPartitionLanes(h.window),
		out:     map[*laneEntry]*message.Message{},
		settled: make(chan settlement, h.window),
		retries: make(chan *laneEntry, h.window),
		marked:  -1,
	}
	defer d.release()
	defer cancel() // ends the messages' contexts and their watchers
	return d.run()
}

// claimDispatch is one partition's dispatch, owned by its ConsumeClaim.
type claimDispatch struct {
	h     *kafkaClaims
	sess  sarama.ConsumerGroupSession
	claim sarama.ConsumerGroupClaim
	ctx   context.Context // the messages' contexts derive from it
	lanes *partitionLanes
	slots chan struct{}                   // a slot is taken by sending, freed by receiving
	held  bool                            // a slot is taken for the next message to hand out
	out   map[*laneEntry]*message.Message // handed out, not settled

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
			go d.watch(e, next)
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
	msg.SetContext(context.WithValue(d.ctx, kafkaPositionKey{},
		kafkaPosition{Partition: km.Partition, Offset: km.Offset}))
	d.lanes.add(km.Offset, key, msg)
	return nil
}

// watch reports the router's verdict on m, the handing out of e, until
// the dispatch ends.
func (d *claimDispatch) watch(e *laneEntry, m *message.Message) {
	var s settlement
	select {
	case <-m.Acked():
		s = settlement{e: e, acked: true}
	case <-m.Nacked():
		s = settlement{e: e}
	case <-d.ctx.Done():
		return
	}
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
	again.SetContext(s.e.msg.Context())
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

// wait hands out nothing more and waits for the messages out to be
// settled, at most h.drain and no longer than the subscription.
func (d *claimDispatch) wait() {
	d.freeHeld()
	if d.lanes.inFlight() == 0 {
		return
	}
	timeout := time.NewTimer(d.h.drain)
	defer timeout.Stop()
	for d.lanes.inFlight() > 0 {
		select {
		case s := <-d.settled:
			d.settle(s, false)
		case <-timeout.C:
			d.settleArrived()
			d.h.logger.Info("Kafka partition given up with messages unsettled; they will be redelivered",
				watermill.LogFields{"topic": d.claim.Topic(), "partition": d.claim.Partition(),
					"unsettled": d.lanes.inFlight()})
			return
		case <-d.h.ctx.Done():
			d.settleArrived()
			return
		}
	}
}

// settleArrived records the verdicts given already, whether or not
// their watchers reported them: an ack that happened before the dispatch
// ended is marked.
func (d *claimDispatch) settleArrived() {
	for e, m := range d.out {
		select {
		case <-m.Acked():
			d.settle(settlement{e: e, acked: true}, false)
		case <-m.Nacked():
			d.settle(settlement{e: e}, false)
		default:
		}
	}
}

// freeHeld frees the slot taken for a message not handed out.
func (d *claimDispatch) freeHeld() {
	if d.held {
		d.held = false
		<-d.slots
	}
}

// release frees the slots of the messages still out, whose verdicts no
// longer count, for the subscription's other partitions.
func (d *claimDispatch) release() {
	d.freeHeld()
	for range d.lanes.inFlight() {
		<-d.slots
	}
}
