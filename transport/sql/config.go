package sql

import (
	"errors"
	"log/slog"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/sqlsubscriber"
)

// Config tunes the PostgreSQL transport. Pool and ServiceName are
// required; the other zero fields take the defaults of
// [sqlsubscriber.Config].
type Config struct {
	// Pool is the PostgreSQL pool the transport publishes through; its
	// subscribers open a pool of their own on its settings.
	Pool *pgxpool.Pool
	// ServiceName names the consumer groups (see
	// [broker.Names.ConsumerGroup]).
	ServiceName string
	// TopicPrefix is prepended to every topic, and so to its tables, and
	// to the consumer groups, so that environments and test runs can share
	// one database. Callers keep using the plain topic names.
	TopicPrefix string
	// PollInterval is the pause after a read that found no message
	// (see [sqlsubscriber.Config] for this and the redelivery).
	PollInterval time.Duration
	// Redelivery: a nacked message is handed out again after the resend
	// interval, holding up its consumer group; one unacknowledged past the
	// ack deadline is read again.
	broker.Redelivery
	// Beginner opens the subscribers' transactions on their pool:
	// [wsql.BeginnerFromPgx] when nil. The service passes
	// exactlyonce.ConsumerBeginner, so that transaction mode's units of
	// work join the transaction that consumes their message
	// (exactlyonce.ConsumerTx).
	Beginner func(wsql.Conn) wsql.Beginner
	// Logger receives the publisher's and subscribers' logs; nil discards
	// them.
	Logger *slog.Logger
}

// Validate checks that c has a pool, a service name and a positive pace,
// its zero fields taking their defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Pool == nil {
		errs = append(errs, errors.New("sql: missing PostgreSQL pool"))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("sql: missing service name"))
	}
	if err := c.subscriberConfig("").Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// subscriberConfig is the subscriber of handler in its consumer group.
func (c Config) subscriberConfig(handler string) sqlsubscriber.Config {
	return sqlsubscriber.Config{
		ConsumerGroup: broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}.ConsumerGroup(handler),
		PollInterval:  c.PollInterval,
		Redelivery:    c.Redelivery,
		Beginner:      c.Beginner,
		Logger:        c.Logger,
	}
}
