package kafka

import (
	"time"

	"github.com/ThreeDotsLabs/watermill"
)

// How a partition's dispatch ends: after a rebalance it waits, bounded,
// for the messages out; when the subscription ends it waits for none.
// Either way it marks every ack given before, and frees its slots.

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
