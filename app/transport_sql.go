package app

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
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
// The subscribers get a pool of their own on the app pool's settings: each
// holds its connection for a whole batch (or while waiting for a replica's
// lock), and on the app pool they would starve the handlers' own queries.
// The publisher uses the app pool.
func newSQL(ctx context.Context, cfg Config, pool *pgxpool.Pool, logger watermill.LoggerAdapter) (transport, error) {
	if pool == nil {
		return transport{}, errors.New("TRANSPORT=sql needs DATABASE_URL")
	}
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(pool), wsql.PublisherConfig{
		SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, logger)
	if err != nil {
		return transport{}, fmt.Errorf("creating the SQL publisher: %w", err)
	}
	consumers, err := openConsumerPool(ctx, pool)
	if err != nil {
		return transport{}, err
	}

	var (
		mu   sync.Mutex
		subs []*wsql.Subscriber
	)
	subscriber := func(handler string) (message.Subscriber, error) {
		db := sqlConsumerDB{wsql.BeginnerFromPgx(consumers)}
		s, err := wsql.NewSubscriber(db, sqlSubscriberConfig(cfg, handler), logger)
		if err != nil {
			return nil, fmt.Errorf("creating the SQL subscriber of %s: %w", handler, err)
		}
		mu.Lock()
		defer mu.Unlock()
		subs = append(subs, s)
		return sqlSubscriber{s}, nil
	}
	closeAll := func() error {
		mu.Lock()
		defer mu.Unlock()
		var err error
		for _, s := range subs {
			err = errors.Join(err, s.Close())
		}
		err = errors.Join(err, pub.Close())
		consumers.Close()
		return err
	}
	return transport{
		publisher:  sqlPublisher{pub},
		subscriber: subscriber,
		close:      closeAll,
	}, nil
}

// sqlSubscriberConfig is the subscriber of handler:
//   - PollInterval (SQL_POLL_INTERVAL) is the pause after an empty read.
//   - ResendInterval, the pause before a nacked message is handed out again
//     (in the same transaction, holding up its group), continues the
//     router's retry backoff at its ceiling (Config.retryMaxInterval).
//   - AckDeadline outlasts the router's whole retry budget for a delivery,
//     so a message still being retried is never handed out a second time.
//     When it passes, the subscriber commits the offsets acked so far and
//     reads the message again.
func sqlSubscriberConfig(cfg Config, handler string) wsql.SubscriberConfig {
	sc := wsql.SubscriberConfig{
		ConsumerGroup:    consumerGroup(cfg, handler),
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: sqlBatchSize},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
		PollInterval:     cfg.SQLPollInterval,
		ResendInterval:   cfg.retryMaxInterval(),
		RetryInterval:    sqlErrorBackoff,
		BackoffManager:   sqlBackoff{wsql.NewDefaultBackoffManager(cfg.SQLPollInterval, sqlErrorBackoff)},
	}
	deadline := cfg.deliveryBudget()
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

// sqlPublisher checks topic names (checkSQLTopic). The transport's close
// closes the publisher; the router never does (see sharedPublisher).
type sqlPublisher struct{ *wsql.Publisher }

func (p sqlPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := checkSQLTopic(topic); err != nil {
		return err
	}
	return p.Publisher.Publish(topic, msgs...)
}

// sqlSubscriber checks topic names before subscribing.
type sqlSubscriber struct{ *wsql.Subscriber }

func (s sqlSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := checkSQLTopic(topic); err != nil {
		return nil, err
	}
	return s.Subscriber.Subscribe(ctx, topic)
}

// checkSQLTopic rejects topics whose table names PostgreSQL would truncate,
// and which could then share a table with another topic. watermill-sql
// itself admits letters, digits and - $ : . _ only (TOPIC_PREFIX included).
func checkSQLTopic(topic string) error {
	if len(topic) > sqlMaxTopicLen {
		return fmt.Errorf("topic %q is longer than %d bytes, too long for PostgreSQL table names", topic, sqlMaxTopicLen)
	}
	return nil
}

// sqlConsumerDB is watermill-sql's pgx adapter for subscribers, with query
// errors reported. With pgx an error such as the serialization failure of a
// replica that lost the race for a consumer group's lock arrives while rows
// are read, and the subscriber never calls Rows.Err: it would take the
// error for an empty table and sleep a poll interval, leaving the lock to
// the other replica for good. Here the error comes back from Scan instead,
// so the subscriber rolls back and backs off as for any error (at once for
// a lost race), and logs it.
type sqlConsumerDB struct{ wsql.Beginner }

func (db sqlConsumerDB) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (wsql.Tx, error) {
	tx, err := db.Beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return sqlConsumerTx{tx}, nil
}

type sqlConsumerTx struct{ wsql.Tx }

func (tx sqlConsumerTx) QueryContext(ctx context.Context, query string, args ...any) (wsql.Rows, error) {
	rows, err := tx.Tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return &errRows{Rows: rows}, nil
}

// errRows yields one more row when reading ended in an error, and its Scan
// returns that error.
type errRows struct {
	wsql.Rows
	done bool
	err  error
}

func (r *errRows) Next() bool {
	if r.done {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.done = true
	if e, ok := r.Rows.(interface{ Err() error }); ok {
		r.err = e.Err()
	}
	return r.err != nil
}

func (r *errRows) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Scan(dest...)
}

// openConsumerPool opens a pool for watermill-sql subscribers on pool's
// settings, capped at sqlConsumerConns and opened on demand. A subscriber
// holds its connection for a whole batch (or while it waits for a
// replica's lock, or for a nacked message's resend): on the app's pool
// subscribers would starve the handlers' own queries.
func openConsumerPool(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Pool, error) {
	pcfg := pool.Config()
	pcfg.MaxConns, pcfg.MinConns, pcfg.MinIdleConns = sqlConsumerConns, 0, 0
	consumers, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the SQL subscribers' pool: %w", err)
	}
	return consumers, nil
}
