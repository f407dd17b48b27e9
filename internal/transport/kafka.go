package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	idem "github.com/onceflow/onceflow/middleware/consume"
)

// Kafka client timeouts. Start-up against a dead cluster fails within about
// 15 s (not after sarama's default retries of 30 s dials): a refused
// connection at once, an unreachable host after kafkaMetadataTimeout plus
// one kafkaDialTimeout, a port that accepts but never answers after three
// kafkaAdminReadTimeouts (sarama tries two ApiVersions requests, then the
// metadata request).
const (
	// kafkaDialTimeout bounds one TCP connection to a broker.
	kafkaDialTimeout = 5 * time.Second
	// kafkaMetadataTimeout bounds a metadata refresh with all its retries.
	kafkaMetadataTimeout = 10 * time.Second
	// kafkaAdminReadTimeout bounds one response to the start-up admin
	// client. It exceeds sarama's Admin.Timeout (3 s), which a broker may
	// take to confirm a topic's creation.
	kafkaAdminReadTimeout = 4 * time.Second
)

// newKafka is the Kafka transport (watermill-kafka's publisher and
// marshaling, and a subscriber of its own, all on sarama). At start-up
// it creates [Config.Topics], each with TopicPrefix prepended, with
// KafkaPartitions partitions and the cluster's default replication factor,
// leaving topics that already exist as they are. An unreachable cluster
// fails start-up within about 15 s, with a one-line error.
//
// The publisher waits for every in-sync replica to store a message
// (acks=all) and keys it by its metadata [idem.MetadataKey] (the
// payment id), so one payment's events keep their order in one partition.
// Each handler gets its own subscriber in its consumer group (see
// [Config.ConsumerGroup] and [kafkaSubscriber]); a new group starts from
// the oldest offset, and the offset committed never passes a message the
// router has not acked, so a rebalance or crash redelivers instead of
// losing (the idempotent receiver absorbs the redelivery).
func newKafka(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (Transport, error) {
	topics := make([]string, len(cfg.Topics))
	for i, topic := range cfg.Topics {
		topics[i] = cfg.TopicPrefix + topic
	}
	if err := createKafkaTopics(ctx, cfg, topics); err != nil {
		return Transport{}, oneLineError{err}
	}
	marshaler := kafkaMarshaler(idem.MetadataKey)
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers:               cfg.KafkaBrokers,
		Marshaler:             marshaler,
		OverwriteSaramaConfig: kafkaPublisherConfig(cfg),
	}, logger)
	if err != nil {
		return Transport{}, oneLineError{fmt.Errorf("starting the publisher: %w", err)}
	}
	var subs subscribers
	subscriber := func(handler string, inFlight int) (message.Subscriber, error) {
		s, err := newKafkaSubscriber(cfg, handler, inFlight, logger)
		if err != nil {
			return nil, err
		}
		subs.add(s)
		return s, nil
	}
	probe := &kafkaProbe{config: cfg, brokers: cfg.KafkaBrokers}
	return Transport{
		publisher:  pub,
		subscriber: subscriber,
		close:      func() error { return errors.Join(subs.close(), pub.Close(), probe.close()) },
		ready:      probe.ready,
	}, nil
}

// kafkaMarshaler writes the Watermill message UUID into header
// _watermill_message_uuid, every metadata entry into a header of its own and
// the payload as the value, and keys the Kafka message by metadata keyEntry
// (or the message UUID when a message has none, which spreads such messages
// over the partitions).
func kafkaMarshaler(keyEntry string) kafka.MarshalerUnmarshaler {
	return kafka.NewWithPartitioningMarshaler(func(_ string, msg *message.Message) (string, error) {
		if key := msg.Metadata.Get(keyEntry); key != "" {
			return key, nil
		}
		return msg.UUID, nil
	})
}

// kafkaBaseConfig is what every client of the service shares, its TLS
// and SASL included.
func kafkaBaseConfig(sc *sarama.Config, cfg Config) *sarama.Config {
	sc.ClientID = cfg.ServiceName
	sc.Version = sarama.V3_0_0_0 // the protocol of Kafka 3.0 and newer
	sc.Net.DialTimeout = kafkaDialTimeout
	sc.Metadata.Timeout = kafkaMetadataTimeout
	applyKafkaSecurity(sc, cfg)
	return sc
}

// kafkaPublisherConfig is watermill-kafka's synchronous producer with
// acks=all: Publish returns once the in-sync replicas have the message.
// Keys are hashed by sarama's default partitioner (FNV-1a).
func kafkaPublisherConfig(cfg Config) *sarama.Config {
	sc := kafkaBaseConfig(kafka.DefaultSaramaSyncPublisherConfig(), cfg)
	sc.Producer.RequiredAcks = sarama.WaitForAll
	return sc
}

// Consumer group timing. A member that crashes (no LeaveGroup) is declared
// dead after kafkaSessionTimeout without heartbeats; the coordinator then
// rebalances, the other members learn of it at their next heartbeat
// (kafkaHeartbeatInterval), wait for their messages in flight — at most
// four fifths of kafkaRebalanceTimeout, leaving the rest to the partitions'
// next owners (see [kafkaSubscriber]) — and rejoin, and the coordinator
// completes the rebalance when all have rejoined or kafkaRebalanceTimeout
// after it began, dropping the members that have not. So on Kafka the
// survivors consume a crashed member's partitions within
// kafkaSessionTimeout + kafkaHeartbeatInterval + kafkaRebalanceTimeout
// (36 s) of its last heartbeat. A clean Close sends LeaveGroup: the
// rebalance starts at once.
const (
	// kafkaSessionTimeout is how long a member may go without heartbeats.
	kafkaSessionTimeout = 10 * time.Second
	// kafkaHeartbeatInterval is how often a member heartbeats; a heartbeat
	// is how it learns that a rebalance began.
	kafkaHeartbeatInterval = time.Second
	// kafkaRebalanceTimeout is how long a member may take to finish its
	// messages in flight and rejoin once a rebalance began. Four fifths of
	// it (20 s), the longest a subscriber waits for them, exceed the
	// service's default handler timeout (10 s), the length of one handler
	// attempt.
	kafkaRebalanceTimeout = 25 * time.Second
	// kafkaGroupReadTimeout bounds the wait for one response on a consumer
	// group's connections. The coordinator holds a JoinGroup until every
	// member rejoined or the rebalance timeout passed, and a SyncGroup
	// until the leader's assignment arrives or the leader is dropped (by
	// its session or the rebalance timeout): both legitimately wait up to
	// kafkaRebalanceTimeout. A client that stops waiting first abandons a
	// rebalance about to complete; it reconnects as a new member, which
	// costs another rebalance. The read timeout is therefore the rebalance
	// timeout plus one session timeout plus 5 s of margin for a loaded
	// broker: 40 s (sarama's default of 30 s left 5 s). It also bounds the
	// wait for a fetch or commit from a broker that stopped answering.
	kafkaGroupReadTimeout = kafkaRebalanceTimeout + kafkaSessionTimeout + 5*time.Second
)

// kafkaSubscriberConfig is the consumer groups' configuration: the timing
// above, new groups start at the oldest offset, and marked offsets are
// committed every second and when a member gives up a partition.
func kafkaSubscriberConfig(cfg Config) *sarama.Config {
	sc := kafkaBaseConfig(kafka.DefaultSaramaSubscriberConfig(), cfg)
	sc.Net.ReadTimeout = kafkaGroupReadTimeout
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Group.Session.Timeout = kafkaSessionTimeout
	sc.Consumer.Group.Heartbeat.Interval = kafkaHeartbeatInterval
	sc.Consumer.Group.Rebalance.Timeout = kafkaRebalanceTimeout
	sc.Consumer.Group.Rebalance.Retry.Max = 10
	sc.Consumer.Group.Rebalance.Retry.Backoff = 250 * time.Millisecond
	return sc
}

// kafkaTopicDetail is how the service creates topics: KafkaPartitions
// partitions, the cluster's default replication factor.
func kafkaTopicDetail(cfg Config) *sarama.TopicDetail {
	return &sarama.TopicDetail{NumPartitions: int32(cfg.KafkaPartitions), ReplicationFactor: -1}
}

// createKafkaTopics creates the topics that do not exist yet.
func createKafkaTopics(ctx context.Context, cfg Config, topics []string) (err error) {
	sc := kafkaBaseConfig(sarama.NewConfig(), cfg)
	sc.Net.ReadTimeout = kafkaAdminReadTimeout
	admin, err := sarama.NewClusterAdmin(cfg.KafkaBrokers, sc)
	if err != nil {
		return fmt.Errorf("connecting to Kafka: %w", err)
	}
	defer func() { err = errors.Join(err, admin.Close()) }()
	for _, topic := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := admin.CreateTopic(topic, kafkaTopicDetail(cfg), false)
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
