package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Tuning of [subscriber].
const (
	// readAhead is how many messages per message in flight a
	// partition may hold from its lowest unacked offset on, so that keys
	// behind a slow one keep the slots busy.
	readAhead = 4
	// resendDelay is the pause before a nacked message is handed out
	// again; only its key waits.
	resendDelay = 100 * time.Millisecond
	// reconnectDelay is the pause before a consumer group that failed
	// joins again.
	reconnectDelay = time.Second
)

// newSubscriber returns handler's subscriber: a member of its
// consumer group ([broker.Names.ConsumerGroup]) with the service's consumer
// configuration ([subscriberConfig]), handing out up to inFlight
// messages at once (see [subscriber]).
func newSubscriber(cfg Config, handler string, inFlight int, logger watermill.LoggerAdapter) (message.Subscriber, error) {
	s, err := newGroupSubscriber(cfg.Brokers, cfg.names().ConsumerGroup(handler), subscriberConfig(cfg), inFlight, logger)
	if err != nil {
		return nil, fmt.Errorf("kafka subscriber of %s: %w", handler, err)
	}
	s.createTopic = func(topic string) error { return createTopics(context.Background(), cfg, []string{topic}) }
	return s, nil
}

// subscriber is a [message.Subscriber] on a sarama consumer group
// that keeps several messages in flight while keeping each key's order.
// It reads messages as watermill-kafka's publisher writes them with
// [marshaler]: UUID, metadata and payload round-trip.
//
// Each subscription hands out at most inFlight messages at once across
// the partitions it owns (with inFlight <= 1, one per partition). Within a
// partition, messages of different Kafka keys (the idempotency key, see
// [marshaler]) are out in parallel, and messages of one key one after
// another in offset order: the next only after the previous was acked. A
// nacked message is handed out again after [resendDelay], ahead of
// its key's later messages.
//
// The offset marked for a partition is its lowest offset not acked, so a
// crash, a rebalance or Close redelivers every message not acked, and
// those acked out of order after it: the idempotent receiver drops those
// as duplicates. A rebalance or Close commits what was marked, so the
// partition's next owner gets again at most max(inFlight, 1) ×
// [readAhead] messages; a crash also repeats what was marked since
// the last commit (sarama commits every second).
//
// When a rebalance takes partitions away, their dispatch hands out nothing
// more and waits for the messages out to be settled, for at most four
// fifths of the rebalance timeout (the rest is for committing and
// rejoining); their acks are then marked, and anything still out is left
// to the next owner. Close and the end of the Subscribe context hand out
// nothing more and wait for no verdict: the acks given before are marked
// and committed, what is out is redelivered, and the channel closes.
//
// A message's context carries its partition and offset
// ([positionFromCtx]); it ends once the message is acked or nacked,
// or before, when its partition's dispatch ends (a rebalance, Close, the
// end of the Subscribe context). Safe for concurrent use.
type subscriber struct {
	brokers  []string
	group    string
	config   *sarama.Config
	inFlight int
	logger   watermill.LoggerAdapter
	// createTopic creates a topic as [New] creates [Config.Topics],
	// unless it exists; nil: SubscribeInitialize creates nothing.
	createTopic func(topic string) error

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	running sync.WaitGroup
}

var (
	_ message.Subscriber           = (*subscriber)(nil)
	_ message.SubscribeInitializer = (*subscriber)(nil)
)

// newGroupSubscriber returns a subscriber of consumer group on
// brokers, configured by sc.
func newGroupSubscriber(brokers []string, group string, sc *sarama.Config, inFlight int, logger watermill.LoggerAdapter) (*subscriber, error) {
	switch {
	case len(brokers) == 0:
		return nil, errors.New("missing brokers")
	case group == "":
		return nil, errors.New("missing consumer group")
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	return &subscriber{
		brokers: brokers, group: group, config: sc, inFlight: max(inFlight, 1),
		logger:  logger.With(watermill.LogFields{"consumer_group": group}),
		closing: make(chan struct{}),
	}, nil
}

// Subscribe joins the consumer group for topic and returns the messages of
// the partitions the group assigns this member, as they change. Each
// message is to be acked or nacked. The channel closes once the
// subscription ended, when ctx ends or the subscriber closes. It fails
// when the cluster cannot be reached.
func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("kafka subscriber closed")
	}
	s.running.Add(1)
	s.mu.Unlock()
	group, err := sarama.NewConsumerGroup(s.brokers, s.group, s.config)
	if err != nil {
		s.running.Done()
		return nil, fmt.Errorf("joining consumer group %s: %w", s.group, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan *message.Message)
	h := newClaims(ctx, out, s.inFlight, s.config, s.logger.With(watermill.LogFields{"topic": topic}))
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	go s.logErrors(group, h.logger)
	go func() {
		defer s.running.Done()
		defer close(out)
		defer cancel()
		s.consume(ctx, group, topic, h)
		if err := group.Close(); err != nil {
			h.logger.Info("Kafka consumer group closed with an error", watermill.LogFields{"err": err})
		}
	}()
	return out, nil
}

// SubscribeInitialize creates topic unless it exists, as [New] creates
// [Config.Topics]: with [Config.Partitions] partitions and the
// cluster's default replication factor, where a first publish would get
// whatever the cluster creates on demand, if it creates topics at all. A
// subscriber built without a [Config] creates nothing.
func (s *subscriber) SubscribeInitialize(topic string) error {
	if s.createTopic == nil {
		return nil
	}
	if err := s.createTopic(topic); err != nil {
		return oneLineError{err}
	}
	return nil
}

// consume runs the group's sessions until ctx ends: a session ends at
// every rebalance, and a failed one is retried after
// reconnectDelay.
func (s *subscriber) consume(ctx context.Context, group sarama.ConsumerGroup, topic string, h *claims) {
	for ctx.Err() == nil {
		err := group.Consume(ctx, []string{topic}, h)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.logger.Error("Kafka consumer group session failed; rejoining", err, nil)
			select {
			case <-time.After(reconnectDelay):
			case <-ctx.Done():
			}
		}
	}
}

// logErrors logs the group's errors until it closes.
func (s *subscriber) logErrors(group sarama.ConsumerGroup, logger watermill.LoggerAdapter) {
	for err := range group.Errors() {
		logger.Error("Kafka consumer group", err, nil)
	}
}

// Close ends every subscription (see [subscriber] for what it
// commits) and returns once their channels are closed and their members
// left the group. Later calls do nothing.
func (s *subscriber) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	s.running.Wait()
	return nil
}
