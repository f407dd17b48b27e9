package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/transport/broker"
)

// Kafka client timeouts. Start-up against a dead cluster fails within about
// 15 s (not after sarama's default retries of 30 s dials): a refused
// connection at once, an unreachable host after metadataTimeout plus
// one dialTimeout, a port that accepts but never answers after three
// adminReadTimeouts (sarama tries two ApiVersions requests, then the
// metadata request).
const (
	// dialTimeout bounds one TCP connection to a broker.
	dialTimeout = 5 * time.Second
	// metadataTimeout bounds a metadata refresh with all its retries.
	metadataTimeout = 10 * time.Second
	// adminReadTimeout bounds one response to the start-up admin
	// client. It exceeds sarama's Admin.Timeout (3 s), which a broker may
	// take to confirm a topic's creation.
	adminReadTimeout = 4 * time.Second
)

// New is the Kafka transport (watermill-kafka's publisher and
// marshaling, and a subscriber of its own, all on sarama), cfg's zero
// fields filled with their defaults. At start-up it creates
// [Config.Topics], each with TopicPrefix prepended, with
// [Config.Partitions] partitions and the cluster's default replication
// factor, leaving topics that already exist as they are. An unreachable
// cluster fails start-up within about 15 s, with a one-line error.
//
// The publisher waits for every in-sync replica to store a message
// (acks=all) and keys it by its metadata [Config.KeyMetadata] (the
// service's idempotency key, such as an order's id), so that the events of
// one key keep their order in one partition. Each handler gets its own subscriber in
// its consumer group (see [broker.Names.ConsumerGroup] and [subscriber]);
// a new group starts from the oldest offset, and the offset committed
// never passes a message the router has not acked, so a rebalance or crash
// redelivers instead of losing (the idempotent receiver absorbs the
// redelivery).
func New(ctx context.Context, cfg Config) (*broker.Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	logger := broker.Logger(cfg.Logger)
	topics := make([]string, len(cfg.Topics))
	for i, topic := range cfg.Topics {
		topics[i] = cfg.TopicPrefix + topic
	}
	if err := createTopics(ctx, cfg, topics); err != nil {
		return nil, oneLineError{err}
	}
	pub, err := wmkafka.NewPublisher(wmkafka.PublisherConfig{
		Brokers:               cfg.Brokers,
		Marshaler:             marshaler(cfg.KeyMetadata),
		OverwriteSaramaConfig: publisherConfig(cfg),
	}, logger)
	if err != nil {
		return nil, oneLineError{fmt.Errorf("starting the publisher: %w", err)}
	}
	var subs broker.Subscribers
	ready := &probe{config: cfg, brokers: cfg.Brokers}
	return broker.New(broker.Parts{
		Publisher: pub,
		Subscriber: func(handler string, inFlight int) (message.Subscriber, error) {
			s, err := newSubscriber(cfg, handler, inFlight, logger)
			if err != nil {
				return nil, err
			}
			subs.Add(s)
			return s, nil
		},
		Close: func() error { return errors.Join(subs.Close(), pub.Close(), ready.close()) },
		Ready: ready.ready,
	}, cfg.TopicPrefix), nil
}

// marshaler writes the Watermill message UUID into header
// _watermill_message_uuid, every metadata entry into a header of its own and
// the payload as the value, and keys the Kafka message by metadata keyEntry
// (or the message UUID when a message has none, which spreads such messages
// over the partitions).
func marshaler(keyEntry string) wmkafka.MarshalerUnmarshaler {
	return wmkafka.NewWithPartitioningMarshaler(func(_ string, msg *message.Message) (string, error) {
		if key := msg.Metadata.Get(keyEntry); key != "" {
			return key, nil
		}
		return msg.UUID, nil
	})
}

// baseConfig is what every client of the service shares, its TLS
// and SASL included.
func baseConfig(sc *sarama.Config, cfg Config) *sarama.Config {
	sc.ClientID = cfg.ServiceName
	sc.Version = sarama.V3_0_0_0 // the protocol of Kafka 3.0 and newer
	sc.Net.DialTimeout = dialTimeout
	sc.Metadata.Timeout = metadataTimeout
	applySecurity(sc, cfg)
	return sc
}

// publisherConfig is watermill-kafka's synchronous producer with
// acks=all: Publish returns once the in-sync replicas have the message.
// Keys are hashed by sarama's default partitioner (FNV-1a).
func publisherConfig(cfg Config) *sarama.Config {
	sc := baseConfig(wmkafka.DefaultSaramaSyncPublisherConfig(), cfg)
	sc.Producer.RequiredAcks = sarama.WaitForAll
	return sc
}

// Consumer group timing. A member that crashes (no LeaveGroup) is declared
// dead after sessionTimeout without heartbeats; the coordinator then
// rebalances, the other members learn of it at their next heartbeat
// (heartbeatInterval), wait for their messages in flight — at most
// four fifths of rebalanceTimeout, leaving the rest to the partitions'
// next owners (see [subscriber]) — and rejoin, and the coordinator
// completes the rebalance when all have rejoined or rebalanceTimeout
// after it began, dropping the members that have not. So on Kafka the
// survivors consume a crashed member's partitions within
// sessionTimeout + heartbeatInterval + rebalanceTimeout
// (36 s) of its last heartbeat. A clean Close sends LeaveGroup: the
// rebalance starts at once.
const (
	// sessionTimeout is how long a member may go without heartbeats.
	sessionTimeout = 10 * time.Second
	// heartbeatInterval is how often a member heartbeats; a heartbeat
	// is how it learns that a rebalance began.
	heartbeatInterval = time.Second
	// rebalanceTimeout is how long a member may take to finish its
	// messages in flight and rejoin once a rebalance began. Four fifths of
	// it (20 s), the longest a subscriber waits for them, exceed the
	// service's default handler timeout (10 s), the length of one handler
	// attempt.
	rebalanceTimeout = 25 * time.Second
	// groupReadTimeout bounds the wait for one response on a consumer
	// group's connections. The coordinator holds a JoinGroup until every
	// member rejoined or the rebalance timeout passed, and a SyncGroup
	// until the leader's assignment arrives or the leader is dropped (by
	// its session or the rebalance timeout): both legitimately wait up to
	// rebalanceTimeout. A client that stops waiting first abandons a
	// rebalance about to complete; it reconnects as a new member, which
	// costs another rebalance. The read timeout is therefore the rebalance
	// timeout plus one session timeout plus 5 s of margin for a loaded
	// broker: 40 s (sarama's default of 30 s left 5 s). It also bounds the
	// wait for a fetch or commit from a broker that stopped answering.
	groupReadTimeout = rebalanceTimeout + sessionTimeout + 5*time.Second
)

// subscriberConfig is the consumer groups' configuration: the timing
// above, new groups start at the oldest offset, and marked offsets are
// committed every second and when a member gives up a partition.
func subscriberConfig(cfg Config) *sarama.Config {
	sc := baseConfig(wmkafka.DefaultSaramaSubscriberConfig(), cfg)
	sc.Net.ReadTimeout = groupReadTimeout
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Group.Session.Timeout = sessionTimeout
	sc.Consumer.Group.Heartbeat.Interval = heartbeatInterval
	sc.Consumer.Group.Rebalance.Timeout = rebalanceTimeout
	sc.Consumer.Group.Rebalance.Retry.Max = 10
	sc.Consumer.Group.Rebalance.Retry.Backoff = 250 * time.Millisecond
	return sc
}

// topicDetail is how the service creates topics: [Config.Partitions]
// partitions, the cluster's default replication factor.
func topicDetail(cfg Config) *sarama.TopicDetail {
	return &sarama.TopicDetail{NumPartitions: int32(cfg.Partitions), ReplicationFactor: -1}
}

// createTopics creates the topics that do not exist yet.
func createTopics(ctx context.Context, cfg Config, topics []string) (err error) {
	sc := baseConfig(sarama.NewConfig(), cfg)
	sc.Net.ReadTimeout = adminReadTimeout
	admin, err := sarama.NewClusterAdmin(cfg.Brokers, sc)
	if err != nil {
		return fmt.Errorf("connecting to Kafka: %w", err)
	}
	defer func() { err = errors.Join(err, admin.Close()) }()
	for _, topic := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := admin.CreateTopic(topic, topicDetail(cfg), false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	return nil
}

// oneLineError keeps sarama's multi-line errors (one line per broker) on one.
type oneLineError struct{ err error }

func (e oneLineError) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e oneLineError) Unwrap() error { return e.err }
