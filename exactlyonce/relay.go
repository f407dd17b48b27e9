package exactlyonce

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
)

// DefaultRelayName is RelayConfig.Name when it is empty.
const DefaultRelayName = "outbox_relay"

// RelayConfig configures [NewRelay].
type RelayConfig struct {
	// Topic is the outbox table's topic: the Outbox's RelayTopic.
	// Required.
	Topic string
	// Name is the relay's handler name. Default DefaultRelayName. Name
	// the relay's subscriber's consumer group after it.
	Name string
	// CloseTimeout bounds how long Close waits for a message being
	// forwarded. Default Watermill's forwarder's, 30s.
	CloseTimeout time.Duration
	// Logger receives the relay's logs; nil discards them.
	Logger *slog.Logger
}

// NewRelay returns Watermill's forwarder reading the outbox table with sub,
// a watermill-sql subscriber (which may be built on [ConsumerBeginner]),
// and publishing each message to its own topic with pub, the broker's
// publisher, keeping its UUID and metadata. A message whose publish fails
// is nacked and read again, in order, so that during a broker outage the
// messages wait in the outbox table and are all delivered once it is back;
// a consumer de-duplicates the rare message published twice (a crash
// between publish and ack) by its UUID or idempotency key. Run it with its
// Run and stop it with its Close, then close sub.
func NewRelay(sub message.Subscriber, pub message.Publisher, cfg RelayConfig) (*forwarder.Forwarder, error) {
	if cfg.Topic == "" {
		return nil, errors.New("the outbox relay needs the outbox table's topic")
	}
	if cfg.Name == "" {
		cfg.Name = DefaultRelayName
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f, err := forwarder.NewForwarder(sub, pub, watermill.NewSlogLogger(logger), forwarder.Config{
		ForwarderTopic: cfg.Topic,
		HandlerName:    cfg.Name,
		CloseTimeout:   cfg.CloseTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the outbox relay: %w", err)
	}
	return f, nil
}
