package kafka

import "github.com/ThreeDotsLabs/watermill/message"

// laneEntry is one message of a partition from the time it is read until
// the lowest unacked offset has passed it.
type laneEntry struct {
	offset int64
	key    string
	msg    *message.Message
	out    bool // handed out, neither acked nor nacked since
	acked  bool
}

// partitionLanes is the bookkeeping of one partition's messages between
// the broker and the handler: a lane (a queue in offset order) per Kafka
// message key, of which only the head may be handed out, and the read
// messages in offset order, for the offset that is safe to commit.
//
// Its guarantees, which hold whatever the order of acks and nacks:
//   - a key's messages are handed out one after another in offset order,
//     the next only after the previous was acked; a nacked message is the
//     next of its key handed out again;
//   - [partitionLanes.mark] never passes the lowest offset read and not
//     acked, so committing it redelivers whatever was not acked after a
//     crash or rebalance;
//   - it holds at most window messages: from the lowest unacked offset
//     to the last read, the acked ones included, which also bounds what a
//     crash redelivers.
//
// Not safe for concurrent use: one partition's dispatcher owns it.
type partitionLanes struct {
	window int
	order  []*laneEntry            // read, offset order, from the lowest unacked
	lanes  map[string][]*laneEntry // per key, offset order, unacked only
	ready  []*laneEntry            // lane heads to hand out, in the order they became so
	next   int64                   // the offset after the last read; -1 before the first
	out    int                     // entries handed out and not settled
}

// newPartitionLanes returns the bookkeeping of a partition holding at
// most window messages (at least one).
func newPartitionLanes(window int) *partitionLanes {
	return &partitionLanes{window: max(window, 1), lanes: map[string][]*laneEntry{}, next: -1}
}

// full reports whether the partition holds window messages: read no more
// until an ack lets the lowest unacked offset advance.
func (p *partitionLanes) full() bool { return len(p.order) >= p.window }

// add takes in the message read at offset, keyed by key. Offsets must
// increase from one call to the next.
func (p *partitionLanes) add(offset int64, key string, msg *message.Message) {
	e := &laneEntry{offset: offset, key: key, msg: msg}
	p.order = append(p.order, e)
	lane := p.lanes[key]
	if len(lane) == 0 {
		p.ready = append(p.ready, e)
	}
	p.lanes[key] = append(lane, e)
	p.next = offset + 1
}

// peek returns what take would, without taking it.
func (p *partitionLanes) peek() *laneEntry {
	if len(p.ready) == 0 {
		return nil
	}
	return p.ready[0]
}

// take returns the next message to hand out and records it as out, or
// nil when every key with messages has one out or waiting to be retried.
func (p *partitionLanes) take() *laneEntry {
	if len(p.ready) == 0 {
		return nil
	}
	e := p.ready[0]
	p.ready[0] = nil
	p.ready = p.ready[1:]
	e.out = true
	p.out++
	return e
}

// inFlight is the number of messages handed out and neither acked nor
// nacked.
func (p *partitionLanes) inFlight() int { return p.out }

// ack records that e, handed out, was acked: the next message of its key
// becomes ready, and the lowest unacked offset may advance. It reports
// whether e was out; an e that was not (acked or nacked already) changes
// nothing.
func (p *partitionLanes) ack(e *laneEntry) bool {
	if !e.out {
		return false
	}
	p.settle(e)
	e.acked = true
	lane := p.lanes[e.key] // e is its head: only heads are handed out
	lane[0] = nil
	if lane = lane[1:]; len(lane) == 0 {
		delete(p.lanes, e.key)
	} else {
		p.lanes[e.key] = lane
		p.ready = append(p.ready, lane[0])
	}
	for len(p.order) > 0 && p.order[0].acked {
		p.order[0] = nil
		p.order = p.order[1:]
	}
	return true
}

// nacked records that e, handed out, was nacked, and reports whether it
// was out. It stays the head of its key's lane, holding back the key's
// later messages, until [partitionLanes.retry] makes it ready again.
func (p *partitionLanes) nacked(e *laneEntry) bool {
	if !e.out {
		return false
	}
	p.settle(e)
	return true
}

// retry makes e, nacked, the next of its key to hand out again.
func (p *partitionLanes) retry(e *laneEntry) { p.ready = append(p.ready, e) }

// settle records that e, out, is out no more.
func (p *partitionLanes) settle(e *laneEntry) {
	e.out = false
	p.out--
}

// mark returns the offset to commit — the lowest offset read and not
// acked, or the one after the last read when all were acked — and false
// before the first message was read.
func (p *partitionLanes) mark() (int64, bool) {
	if len(p.order) > 0 {
		return p.order[0].offset, true
	}
	return p.next, p.next >= 0
}
