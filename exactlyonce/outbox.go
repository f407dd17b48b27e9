package exactlyonce

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Outbox writes messages in the transaction of the unit of work that a
// context carries ([postgres.TxFromContext], as [Transactor]'s units do),
// with a watermill-sql publisher on that transaction, so that they commit
// or roll back with the unit's other writes and its record (the
// transactional outbox). Outside a unit of work it publishes them on
// Publisher.
//
// Each message goes to its topic's table, for the watermill-sql
// subscribers of the topic, or, with RelayTopic set, to one outbox table,
// enveloped with its topic (Watermill's forwarder format), from which
// [NewRelay] publishes it to any other broker.
//
// A publisher on a transaction cannot create a table: every table written
// must exist before (a watermill-sql subscriber to its topic, or its
// SubscribeInitialize, creates it). The zero value is not usable: set
// Publisher, and Topics for Write. Safe for concurrent use.
type Outbox struct {
	// Topics maps each handler to the topic of the messages it produces,
	// for Write. A handler that is not in it fails to write.
	Topics map[string]string
	// Publisher publishes the messages written outside a unit of work.
	// Required.
	Publisher message.Publisher
	// RelayTopic, when set, is the topic of the outbox table, as the
	// relay's subscriber reads it (prefix included): messages are written
	// there, enveloped with their topic, for NewRelay. Empty: each message
	// is written to its own topic's table.
	RelayTopic string
	// TopicPrefix is prepended to a message's topic to name the table it
	// is written to when RelayTopic is empty, as a prefixed SQL transport
	// does. An envelope keeps the topic as given, for the relay's
	// publisher to prefix.
	TopicPrefix string
	// SchemaAdapter is the tables' watermill-sql schema. Default
	// [wsql.DefaultPostgreSQLSchema].
	SchemaAdapter wsql.SchemaAdapter
	// Decorate, when set, wraps the publisher of every write: for
	// instance [tracecontext.Messages.Publisher], for a publish span per
	// message.
	Decorate func(message.Publisher) message.Publisher
	// Logger receives the watermill-sql publisher's logs; nil discards
	// them.
	Logger *slog.Logger
}

var _ consume.Outbox = Outbox{}.Write

// Write is the [consume.Outbox] (see [consume.WithOutbox]): it writes
// the messages handler produced to Topics[handler], in the unit of work
// ctx carries.
func (o Outbox) Write(ctx context.Context, handler string, msgs []*message.Message) error {
	topic, ok := o.Topics[handler]
	if !ok {
		return fmt.Errorf("handler %q produced messages but has no output topic", handler)
	}
	return o.Publish(ctx, topic, msgs...)
}

// Publish writes msgs to topic in the unit of work ctx carries, or
// publishes them on Publisher when it carries none.
func (o Outbox) Publish(ctx context.Context, topic string, msgs ...*message.Message) error {
	if o.Decorate == nil {
		return o.send(ctx, topic, msgs...)
	}
	return o.Decorate(publishFunc(func(topic string, msgs ...*message.Message) error {
		return o.send(ctx, topic, msgs...)
	})).Publish(topic, msgs...)
}

// send is Publish without the decoration.
func (o Outbox) send(ctx context.Context, topic string, msgs ...*message.Message) error {
	var tx wsql.Tx
	if pgxTx, ok := postgres.TxFromContext(ctx); ok {
		tx = wsql.TxFromPgx(pgxTx)
	} else if sqlTx, ok := postgres.SQLTxFromContext(ctx); ok {
		tx = wsql.TxFromStdSQL(sqlTx)
	} else {
		return o.Publisher.Publish(topic, msgs...)
	}
	schema := o.SchemaAdapter
	if schema == nil {
		schema = wsql.DefaultPostgreSQLSchema{}
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pub, err := wsql.NewPublisher(tx, wsql.PublisherConfig{SchemaAdapter: schema}, watermill.NewSlogLogger(logger))
	if err != nil {
		return fmt.Errorf("creating the SQL publisher on the transaction: %w", err)
	}
	if o.RelayTopic == "" {
		return pub.Publish(o.TopicPrefix+topic, msgs...)
	}
	return forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: o.RelayTopic}).Publish(topic, msgs...)
}

// UnitPublisher returns o as a [message.Publisher] that writes each
// Publish in the unit of work the context of its first message carries
// ([message.Message.Context]): an HTTP handler running in a unit of work
// commits the messages it publishes with its other writes. Its Close does
// nothing.
func (o Outbox) UnitPublisher() message.Publisher { return unitPublisher{o} }

type unitPublisher struct{ o Outbox }

func (p unitPublisher) Publish(topic string, msgs ...*message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	return p.o.Publish(msgs[0].Context(), topic, msgs...)
}

func (unitPublisher) Close() error { return nil }

// publishFunc is a [message.Publisher] of one function, with nothing to
// close.
type publishFunc func(topic string, msgs ...*message.Message) error

func (f publishFunc) Publish(topic string, msgs ...*message.Message) error { return f(topic, msgs...) }

func (publishFunc) Close() error { return nil }
