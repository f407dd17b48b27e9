package sqlsubscriber

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/transport/broker"
)

// BatchSize is how many messages one subscriber transaction reads.
const BatchSize = 50

// Tuning of the subscribers; the sql transport's doc explains the choices.
const (
	// yield is the pause after a batch that delivered messages, which
	// lets a replica waiting for the consumer group's lock take the next.
	yield = 5 * time.Millisecond
	// errorBackoff is the pause after a failed query (PostgreSQL down). A
	// lost race for a consumer group's lock is retried at once instead.
	errorBackoff = time.Second
)

// Defaults that [Config] fills in for zero fields.
const (
	DefaultPollInterval = 100 * time.Millisecond
)

// Config is a subscriber's consumer group and pace. ConsumerGroup is
// required; [New] fills the other zero fields with their defaults and
// [broker.Redelivery]'s.
type Config struct {
	// ConsumerGroup names the group the subscriber reads in: its position
	// in each topic is a row of the topic's offsets table.
	ConsumerGroup string
	// PollInterval is the pause after a read that found no message;
	// DefaultPollInterval when zero.
	PollInterval time.Duration
	// Redelivery: a nacked message is handed out again after the resend
	// interval, in the same transaction, holding up its group; past the
	// ack deadline the subscriber commits the offsets acked so far and
	// reads the message again.
	broker.Redelivery
	// Beginner opens the subscriber's transactions on its pool:
	// [wsql.BeginnerFromPgx] when nil. The service passes
	// exactlyonce.ConsumerBeginner, so that transaction mode's units of
	// work join the transaction that consumes their message.
	Beginner func(wsql.Conn) wsql.Beginner
	// Logger receives the subscriber's logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	c.Redelivery = c.Redelivery.WithDefaults()
	if c.Beginner == nil {
		c.Beginner = wsql.BeginnerFromPgx
	}
	return c
}

// Validate checks that c, its defaults filled, names a consumer group and
// has a positive pace.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.ConsumerGroup == "" {
		errs = append(errs, errors.New("sql: missing consumer group"))
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("sql: poll interval %v: want more than 0", c.PollInterval))
	}
	if err := c.Redelivery.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sql: %w", err))
	}
	return errors.Join(errs...)
}

// New is a watermill-sql subscriber on consumers (see [OpenConsumerPool])
// in the consumer group cfg names, PostgreSQL's default schema and offsets
// adapter, creating a topic's tables on first use:
//   - It reads batches of BatchSize messages, each in a transaction that locks
//     the group's offsets row, so that replicas of one group take turns
//     and never receive the same message.
//   - PollInterval is the pause after an empty read, and after a batch
//     that delivered messages it pauses 5ms, which lets a replica waiting
//     for the group's lock take the next; after a failed query, a second.
//   - Its redelivery is the caller's (see [Config]).
//
// The caller closes it.
func New(consumers *pgxpool.Pool, cfg Config) (*wsql.Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	deadline := cfg.AckDeadline
	s, err := wsql.NewSubscriber(cfg.Beginner(consumers), wsql.SubscriberConfig{
		ConsumerGroup:    cfg.ConsumerGroup,
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: BatchSize},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
		PollInterval:     cfg.PollInterval,
		ResendInterval:   cfg.ResendInterval,
		RetryInterval:    errorBackoff,
		BackoffManager:   backoff{wsql.NewDefaultBackoffManager(cfg.PollInterval, errorBackoff)},
		AckDeadline:      &deadline,
	}, broker.Logger(cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("creating the SQL subscriber of consumer group %s: %w", cfg.ConsumerGroup, err)
	}
	return s, nil
}

// backoff is watermill-sql's default backoff (the poll interval after an
// empty read, errorBackoff after an error, none after a lost lock race)
// with two changes. After a read that delivered messages it pauses for
// yield: without that the replica holding a consumer group's lock takes
// it again at once and keeps the group's work to itself. And a read
// cancelled because the subscriber is stopping is not logged as an error.
type backoff struct{ wsql.BackoffManager }

func (b backoff) HandleError(logger watermill.LoggerAdapter, noMsg bool, err error) time.Duration {
	switch {
	case err == nil && !noMsg:
		return yield
	case errors.Is(err, context.Canceled):
		return 0 // the subscriber stops before it reads again
	default:
		return b.BackoffManager.HandleError(logger, noMsg, err)
	}
}
