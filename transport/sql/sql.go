package sql

import (
	"context"
	"errors"
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/sqlsubscriber"
)

// maxTopicLen is the longest topic whose tables keep distinct names:
// PostgreSQL truncates identifiers to 63 bytes, and the longest table of a
// topic is "watermill_offsets_" + topic.
const maxTopicLen = 63 - len("watermill_offsets_")

// New is the PostgreSQL transport (watermill-sql, default PostgreSQL
// schema and offsets adapter). Topic T is the table "watermill_T" and each
// consumer group's position a row of "watermill_offsets_T"; both are created
// on first use, so any process using the same preset — this service or a
// producer of its own — can publish to a topic before anyone consumes it.
// A new consumer group starts at the oldest message.
//
// Delivery within one consumer group is serial and ordered: a subscriber
// reads a batch in a transaction that locks the group's offsets row (FOR
// UPDATE), hands the messages to its handler one at a time, and commits the
// new offset after the last ack. A replica of the same group waits on that
// lock, fails with a serialization error when it is released, and retries
// at once while the holder pauses (5ms): replicas take turns batch by
// batch and never receive the same message. They add availability, not
// parallelism. Only rows of transactions older than every running one are
// read, so any long-running transaction on the server, these batches
// included, delays delivery until it ends: batches are kept short.
//
// So a handler holds one message at a time here, whatever its in-flight
// setting: that is watermill-sql's limit, not a choice. Its subscriber
// hands out a batch's messages one by one inside the transaction that holds
// the group's offsets row, resending a nacked message before any later one
// (which is what keeps the order), and has no setting for more; in
// transaction mode the handler's writes join that transaction, and a
// connection runs one statement at a time. A second subscription to the
// same group only takes turns on the lock. Splitting a group into several
// by a hash of the key would need a schema adapter of our own whose every
// read filters the other splits' rows out, and a different count of splits
// would start the new groups at the oldest message.
//
// The subscribers, tuned as [sqlsubscriber.New] describes, get a pool of
// their own (see [sqlsubscriber.OpenConsumerPool]); the publisher uses
// [Config.Pool]. The transport is ready when that pool's database answers
// a ping.
func New(ctx context.Context, cfg Config) (*broker.Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := broker.Logger(cfg.Logger)
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(cfg.Pool), wsql.PublisherConfig{
		SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("creating the SQL publisher: %w", err)
	}
	consumers, err := sqlsubscriber.OpenConsumerPool(ctx, cfg.Pool)
	if err != nil {
		return nil, err
	}
	var subs broker.Subscribers
	return broker.New(broker.Parts{
		Publisher: publisher{pub},
		Subscriber: func(handler string, _ int) (message.Subscriber, error) {
			s, err := sqlsubscriber.New(consumers, cfg.subscriberConfig(handler))
			if err != nil {
				return nil, err
			}
			sub := &subscriber{Subscriber: s}
			subs.Add(sub)
			return sub, nil
		},
		Close: func() error {
			err := errors.Join(subs.Close(), pub.Close())
			consumers.Close()
			return err
		},
		Ready: func(ctx context.Context) error { return cfg.Pool.Ping(ctx) },
	}, cfg.TopicPrefix), nil
}

// publisher checks topic names (checkTopic). [broker.Transport.Close]
// closes the publisher; the router never does.
type publisher struct{ *wsql.Publisher }

func (p publisher) Publish(topic string, msgs ...*message.Message) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	return p.Publisher.Publish(topic, msgs...)
}

// subscriber checks topic names before subscribing or creating a
// topic's tables, and returns from Close once its subscriptions' channels
// are closed: watermill-sql's Close returns as its subscriptions stop, a
// moment before their channels close. Each subscription is
// watermill-sql's, handed out through one lane ([broker.Lanes]). Close
// closes the adapter's subscriber first, which lets a unit of work open in
// the consumer transaction finish (see [Config.Beginner]):
// ending the lane's context first would roll that transaction back. It
// then ends the lane, so a message the lane was handing out is nacked, and
// waits for its channel.
type subscriber struct {
	*wsql.Subscriber
	subs broker.Lanes
}

func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	return s.subs.Subscribe(ctx, 1, func(ctx context.Context) (<-chan *message.Message, error) {
		return s.Subscriber.Subscribe(ctx, topic)
	}, nil)
}

func (s *subscriber) Close() error {
	err := s.Subscriber.Close()
	s.subs.End()
	return err
}

// SubscribeInitialize creates the tables of topic unless they exist.
func (s *subscriber) SubscribeInitialize(topic string) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	return s.Subscriber.SubscribeInitialize(topic)
}

// checkTopic rejects topics whose table names PostgreSQL would truncate,
// and which could then share a table with another topic. watermill-sql
// itself admits letters, digits and - $ : . _ only (TopicPrefix included).
func checkTopic(topic string) error {
	if len(topic) > maxTopicLen {
		return fmt.Errorf("topic %q is longer than %d bytes, too long for PostgreSQL table names", topic, maxTopicLen)
	}
	return nil
}
