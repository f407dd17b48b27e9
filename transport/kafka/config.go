package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"

	"github.com/onceflow/onceflow/transport/broker"
)

// DefaultPartitions is the partition count of the topics the transport
// creates when [Config.Partitions] is zero.
const DefaultPartitions = 4

// Config tunes the Kafka transport. Brokers and ServiceName are required;
// [New] fills the other zero fields with their defaults and then validates.
type Config struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// ServiceName names the consumer groups (see
	// [broker.Names.ConsumerGroup]) and the Kafka client.
	ServiceName string
	// TopicPrefix is prepended to every topic on the broker and to the
	// consumer groups, so that environments and test runs can share one
	// cluster. Callers keep using the plain topic names.
	TopicPrefix string
	// Topics are created at start-up, with TopicPrefix, so that a message
	// published before its consumer group exists is kept. Other topics are
	// created as the cluster creates them on first use (or by a
	// subscriber's SubscribeInitialize).
	Topics []string
	// Partitions is the partition count of the topics created;
	// DefaultPartitions when zero.
	Partitions int
	// SASL authenticates the clients; the zero value does not.
	SASL SASL
	// TLS, when not nil, is the TLS configuration of every connection to
	// Kafka; nil connects in plaintext.
	TLS *tls.Config
	// KeyMetadata is the metadata entry whose value keys each message
	// published (its partition), so that the messages of one key keep
	// their order: the service passes the receiver's idempotency key
	// entry. A message without it, or every message when KeyMetadata is
	// "", is keyed by its UUID, which spreads such messages over the
	// partitions.
	KeyMetadata string
	// Logger receives the clients' logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	return c
}

// Validate checks that c, its defaults filled, names brokers and a
// service, a positive partition count and supported SASL credentials.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("kafka: missing brokers"))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("kafka: missing service name"))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("kafka: %d partitions, want at least 1", c.Partitions))
	}
	if err := c.SASL.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// names are what the transport names its consumer groups after.
func (c Config) names() broker.Names {
	return broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}
}
