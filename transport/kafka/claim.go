package kafka

import (
	"context"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// claims is the [sarama.ConsumerGroupHandler] of one subscription: it
// hands each claimed partition's messages to out through a
// [partitionLanes], at most inFlight at once across the partitions (one
// per partition when inFlight <= 1), and marks the lowest unacked offset
// of each partition.
type claims struct {
	// ctx is the subscription's: it ends when the subscriber closes or the
	// Subscribe context ends. The messages' contexts derive from it.
	ctx       context.Context
	out       chan<- *message.Message
	unmarshal wmkafka.Unmarshaler
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

// newClaims returns the handler of a subscription that hands out
// its messages on out, at most inFlight at once, while ctx lasts, with the
// consumer group configuration sc.
func newClaims(ctx context.Context, out chan<- *message.Message, inFlight int, sc *sarama.Config, logger watermill.LoggerAdapter) *claims {
	h := &claims{
		ctx: ctx, out: out, unmarshal: marshaler(""), // the key matters on the way out only
		window: max(inFlight, 1) * readAhead,
		drain:  sc.Consumer.Group.Rebalance.Timeout * 4 / 5,
		resend: resendDelay,
		commit: !sc.Consumer.Offsets.AutoCommit.Enable,
		logger: logger,
	}
	if inFlight > 1 {
		h.shared = make(chan struct{}, inFlight)
	}
	return h
}

// Setup does nothing: the partitions are set up in ConsumeClaim.
func (h *claims) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing: ConsumeClaim marked what it could.
func (h *claims) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim dispatches one partition until its claim ends.
//
// When the session ends (a rebalance, the partition revoked) it hands out
// nothing more and waits for the messages out to be acked or nacked, at
// most h.drain, then returns; when the subscription ends (Close, or the
// Subscribe context) it returns at once. Either way the offset marked is
// the partition's lowest unacked, so whatever is out then is redelivered
// to whoever consumes the partition next.
func (h *claims) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	ctx, cancel := context.WithCancel(h.ctx)
	slots := h.shared
	if slots == nil {
		slots = make(chan struct{}, 1)
	}
	d := &claimDispatch{
		h: h, sess: sess, claim: claim, ctx: ctx, slots: slots,
		lanes:   newPartitionLanes(h.window),
		out:     map[*laneEntry]*message.Message{},
		cancels: map[*message.Message]context.CancelFunc{},
		settled: make(chan settlement, h.window),
		retries: make(chan *laneEntry, h.window),
		marked:  -1,
	}
	defer d.release()
	defer cancel() // ends the messages' contexts and their watchers
	return d.run()
}
