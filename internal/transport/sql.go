package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/exactlyonce"
)

// Tuning of the PostgreSQL transport; newSQL explains the choices.
const (
	// sqlBatchSize is how many messages one subscriber transaction reads.
	sqlBatchSize = 50
	// sqlYield is the pause after a batch that delivered messages, which
	// lets a replica waiting for the consumer group's lock take the next.
	sqlYield = 5 * time.Millisecond
	// sqlErrorBackoff is the pause after a failed query (PostgreSQL down).
	// A lost race for a consumer group's lock is retried at once instead.
	sqlErrorBackoff = time.Second
	// sqlConsumerConns caps the subscribers' own pool. Each subscriber
	// holds one connection at a time, opened on demand; the cap only
	// bounds a service with very many handlers.
	sqlConsumerConns = 32
	// sqlMaxTopicLen is the longest topic whose tables keep distinct names:
	// PostgreSQL truncates identifiers to 63 bytes, and the longest table
	// of a topic is "watermill_offsets_" + topic.
	sqlMaxTopicLen = 63 - len("watermill_offsets_")
)

// newSQL is the PostgreSQL transport (watermill-sql, default PostgreSQL
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
// at once while the holder pauses (sqlYield): replicas take turns batch by
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
// The subscribers get a pool of their own (see [OpenConsumerPool]); the
// publisher uses [Config.Pool].
func newSQL(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (Transport, error) {
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(cfg.Pool), wsql.PublisherConfig{
		SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, logger)
	if err != nil {
		return Transport{}, fmt.Errorf("creating the SQL publisher: %w", err)
	}
	consumers, err := OpenConsumerPool(ctx, cfg.Pool)
	if err != nil {
		return Transport{}, err
	}
	var subs subscribers
	subscriber := func(handler string, _ int) (message.Subscriber, error) {
		s, err := newSQLSubscriber(consumers, cfg, handler, logger)
		if err != nil {
			return nil, err
		}
		sub := &sqlSubscriber{Subscriber: s}
		subs.add(sub)
		return sub, nil
	}
	closeAll := func() error {
		err := errors.Join(subs.close(), pub.Close())
		consumers.Close()
		return err
	}
	return Transport{
		publisher:  sqlPublisher{pub},
		subscriber: subscriber,
		close:      closeAll,
		ready:      postgresAnswers(cfg.Pool),
	}, nil
}

// NewSQLSubscriber is the SQL transport's subscriber for handler, in its
// consumer group ([Config.ConsumerGroup]), on consumers (see
// [OpenConsumerPool]): the outbox relay reads the outbox table with it.
// cfg's zero fields take their defaults. The caller closes it.
func NewSQLSubscriber(consumers *pgxpool.Pool, cfg Config, handler string) (message.Subscriber, error) {
	cfg = cfg.withDefaults()
	return newSQLSubscriber(consumers, cfg, handler, watermill.NewSlogLogger(cfg.Logger))
}

func newSQLSubscriber(consumers *pgxpool.Pool, cfg Config, handler string, logger watermill.LoggerAdapter) (*wsql.Subscriber, error) {
	s, err := wsql.NewSubscriber(exactlyonce.ConsumerBeginner(consumers), sqlSubscriberConfig(cfg, handler), logger)
	if err != nil {
		return nil, fmt.Errorf("creating the SQL subscriber of %s: %w", handler, err)
	}
	return s, nil
}

// sqlSubscriberConfig is the subscriber of handler:
//   - PollInterval (SQLPollInterval) is the pause after an empty read.
//   - ResendInterval, the pause before a nacked message is handed out again
//     (in the same transaction, holding up its group), is the caller's: the
//     service continues its router's retry backoff at its ceiling.
//   - AckDeadline is the caller's: the service's outlasts the router's
//     whole retry budget for a delivery, so a message still being retried
//     is never handed out a second time. When it passes, the subscriber
//     commits the offsets acked so far and reads the message again.
func sqlSubscriberConfig(cfg Config, handler string) wsql.SubscriberConfig {
	sc := wsql.SubscriberConfig{
		ConsumerGroup:    cfg.ConsumerGroup(handler),
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: sqlBatchSize},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
		PollInterval:     cfg.SQLPollInterval,
		ResendInterval:   cfg.ResendInterval,
		RetryInterval:    sqlErrorBackoff,
		BackoffManager:   sqlBackoff{wsql.NewDefaultBackoffManager(cfg.SQLPollInterval, sqlErrorBackoff)},
	}
	deadline := cfg.AckDeadline
	sc.AckDeadline = &deadline
	return sc
}

// sqlBackoff is watermill-sql's default backoff (the poll interval after an
// empty read, sqlErrorBackoff after an error, none after a lost lock race)
// with two changes. After a read that delivered messages it pauses for
// sqlYield: without that the replica holding a consumer group's lock takes
// it again at once and keeps the group's work to itself. And a read
// cancelled because the subscriber is stopping is not logged as an error.
type sqlBackoff struct{ wsql.BackoffManager }

func (b sqlBackoff) HandleError(logger watermill.LoggerAdapter, noMsg bool, err error) time.Duration {
	switch {
	case err == nil && !noMsg:
		return sqlYield
	case errors.Is(err, context.Canceled):
		return 0 // the subscriber stops before it reads again
	default:
		return b.BackoffManager.HandleError(logger, noMsg, err)
	}
}

// sqlPublisher checks topic names (checkSQLTopic). [Transport.Close]
// closes the publisher; the router never does (see sharedPublisher).
type sqlPublisher struct{ *wsql.Publisher }

func (p sqlPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := checkSQLTopic(topic); err != nil {
		return err
	}
	return p.Publisher.Publish(topic, msgs...)
}

// sqlSubscriber checks topic names before subscribing or creating a
// topic's tables, and returns from Close once its subscriptions' channels
// are closed: watermill-sql's Close returns as its subscriptions stop, a
// moment before their channels close. Each subscription is
// watermill-sql's, handed out through one lane (subscribeLanes). Close
// closes the adapter's subscriber first, which lets a unit of work open in
// the consumer transaction finish (see [exactlyonce.ConsumerBeginner]):
// ending the lane's context first would roll that transaction back. It
// then ends the lane, so a message the lane was handing out is nacked, and
// waits for its channel.
type sqlSubscriber struct {
	*wsql.Subscriber
	subs laneSubscriptions
}

func (s *sqlSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := checkSQLTopic(topic); err != nil {
		return nil, err
	}
	return s.subs.subscribe(ctx, 1, func(ctx context.Context) (<-chan *message.Message, error) {
		return s.Subscriber.Subscribe(ctx, topic)
	}, nil)
}

func (s *sqlSubscriber) Close() error {
	err := s.Subscriber.Close()
	s.subs.end()
	return err
}

// SubscribeInitialize creates the tables of topic unless they exist.
func (s *sqlSubscriber) SubscribeInitialize(topic string) error {
	if err := checkSQLTopic(topic); err != nil {
		return err
	}
	return s.Subscriber.SubscribeInitialize(topic)
}

// checkSQLTopic rejects topics whose table names PostgreSQL would truncate,
// and which could then share a table with another topic. watermill-sql
// itself admits letters, digits and - $ : . _ only (TopicPrefix included).
func checkSQLTopic(topic string) error {
	if len(topic) > sqlMaxTopicLen {
		return fmt.Errorf("topic %q is longer than %d bytes, too long for PostgreSQL table names", topic, sqlMaxTopicLen)
	}
	return nil
}
