package transport

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
)

// ConsumerTx returns the transaction in which the SQL transport consumes
// the message whose context ctx is: work done in it commits with the
// consumed offset. Watermill SQL does not roll it back on a nack, so a
// caller that may fail works in a savepoint of it: its Begin. The consumer
// transaction does not end while such a savepoint is open, not even when
// the subscriber closes (see unitGuard), so the caller must commit or roll
// it back. It reports false for a message of any other transport, or of
// another subscriber.
func ConsumerTx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := wsql.TxFromContext(ctx)
	if !ok {
		return nil, false
	}
	c, ok := tx.(sqlConsumerTx)
	if !ok {
		return nil, false
	}
	switch t := c.Tx.(type) {
	case *wsql.PgxTx:
		return guardedTx{Tx: t.Tx, guard: c.guard}, true
	case wsql.PgxTx:
		return guardedTx{Tx: t.Tx, guard: c.guard}, true
	}
	return nil, false
}

// NewSQLTxPublisher publishes in tx, with the SQL transport's schema: the
// messages commit or roll back with it. A publisher on a transaction
// cannot create a topic's table: it must exist before (a subscriber to the
// topic creates it). A nil logger discards the logs.
func NewSQLTxPublisher(tx pgx.Tx, logger *slog.Logger) (message.Publisher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{},
	}, watermill.NewSlogLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("creating the SQL publisher on the transaction: %w", err)
	}
	return pub, nil
}
