package nats

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceflow/onceflow/transport/broker"
)

// Defaults that [Config] fills in for zero fields.
const (
	DefaultMaxAge = 7 * 24 * time.Hour
)

// Config tunes the NATS JetStream transport. URL and ServiceName are
// required; [New] fills the other zero fields with the defaults above and
// [broker.Redelivery]'s, and then validates.
type Config struct {
	// URL is the NATS server with JetStream, e.g. nats://127.0.0.1:4222.
	URL string
	// ServiceName names the durable consumers (see
	// [broker.Names.NATSDurable]) and the connections.
	ServiceName string
	// TopicPrefix is prepended to every subject, and so to its stream's
	// name, and to the durable consumers, so that environments and test
	// runs can share one server. Callers keep using the plain topic names.
	TopicPrefix string
	// Topics have their streams created at start-up (see
	// [broker.NATSStream]), with TopicPrefix, so that a message published
	// before its consumer exists is kept; the stream of a topic not listed
	// is created before its first publish or subscription.
	Topics []string
	// MaxAge is how long the streams the transport creates keep a message,
	// acked or not (they retain by limits; see [New]). It bounds how long
	// a handler may be down without losing messages.
	MaxAge time.Duration
	// Redelivery is JetStream's: its ack deadline is the consumers' ack
	// wait, and a nacked message is redelivered after the resend
	// interval.
	broker.Redelivery
	// KeyMetadata is the metadata entry holding a message's idempotency
	// key, the service's receiver's: the transport sets it as the message's
	// JetStream id (Nats-Msg-Id), so that the stream drops a copy of one
	// key within its duplicate window. A message without it, or every
	// message when KeyMetadata is "", is identified by its UUID.
	KeyMetadata string
	// Logger receives the connections' logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	c.Redelivery = c.Redelivery.WithDefaults()
	return c
}

// Validate checks that c, its defaults filled, names a server and a
// service, and has a positive stream age and [broker.Redelivery].
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("nats: missing URL"))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("nats: missing service name"))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("nats: stream max age %v: want more than 0", c.MaxAge))
	}
	if err := c.Redelivery.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("nats: %w", err))
	}
	return errors.Join(errs...)
}

// names are what the transport names its streams and consumers after.
func (c Config) names() broker.Names {
	return broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}
}
