package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/sqlsubscriber"
)

// Names of the transactional outbox (DEDUP_MODE=transaction with a broker
// other than sql): the SQL topic it is written to, after TOPIC_PREFIX, and
// the relay's handler, which names its consumer group.
const (
	outboxTopic   = "outbox"
	outboxHandler = "outbox_relay"
)

// newRelay is the outbox relay ([exactlyonce.NewRelay]) reading the outbox
// table with a subscriber as the sql transport's ([sqlsubscriber.New],
// paced as transportConfig paces that transport) on a consumer pool of its
// own (returned, for the caller to close after the relay) and publishing
// each message to its topic on the transport, whatever the transport. A
// message whose publish fails is nacked and read again (after
// Config.retryMaxInterval), in order, so that during a broker outage
// messages wait in the outbox and are all delivered once it is back.
func newRelay(ctx context.Context, cfg Config, pool *pgxpool.Pool, publisher message.Publisher,
	logger *slog.Logger) (*forwarder.Forwarder, *pgxpool.Pool, error) {
	if pool == nil {
		return nil, nil, errors.New("the outbox needs DATABASE_URL")
	}
	consumers, err := sqlsubscriber.OpenConsumerPool(ctx, pool)
	if err != nil {
		return nil, nil, err
	}
	sub, err := sqlsubscriber.New(consumers, sqlsubscriber.Config{
		ConsumerGroup: broker.Names{TopicPrefix: cfg.TopicPrefix, ServiceName: cfg.ServiceName}.ConsumerGroup(outboxHandler),
		PollInterval:  cfg.SQLPollInterval,
		Redelivery:    cfg.redelivery(),
		Beginner:      exactlyonce.ConsumerBeginner,
		Logger:        logger,
	})
	if err != nil {
		consumers.Close()
		return nil, nil, err
	}
	f, err := exactlyonce.NewRelay(sub, publisher, exactlyonce.RelayConfig{
		Topic:        cfg.TopicPrefix + outboxTopic,
		Name:         outboxHandler,
		CloseTimeout: cfg.ShutdownTimeout,
		Logger:       logger,
	})
	if err != nil {
		_ = sub.Close()
		consumers.Close()
		return nil, nil, err
	}
	return f, consumers, nil
}
