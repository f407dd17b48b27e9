package amqp

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceflow/onceflow/transport/broker"
)

// DefaultConnectTimeout is how long [New] retries the first connection to
// RabbitMQ when [Config.ConnectTimeout] is zero.
const DefaultConnectTimeout = 30 * time.Second

// Config tunes the RabbitMQ transport. URL and ServiceName are required;
// [New] fills the other zero fields with their defaults and then validates.
type Config struct {
	// URL is RabbitMQ, e.g. amqp://guest:guest@127.0.0.1:5672/.
	URL string
	// ServiceName names the queues (see [broker.Names.AMQPQueue]).
	ServiceName string
	// TopicPrefix is prepended to every exchange and queue, so that
	// environments and test runs can share one broker. Callers keep using
	// the plain topic names.
	TopicPrefix string
	// ConnectTimeout is how long [New] keeps retrying the first
	// connection to RabbitMQ; DefaultConnectTimeout when zero.
	ConnectTimeout time.Duration
	// Logger receives the connections' logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	return c
}

// Validate checks that c, its defaults filled, names RabbitMQ and a
// service, and has a positive connect timeout.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("amqp: missing URL"))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("amqp: missing service name"))
	}
	if c.ConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("amqp: connect timeout %v, want more than 0", c.ConnectTimeout))
	}
	return errors.Join(errs...)
}

// names are what the transport names its queues after.
func (c Config) names() broker.Names {
	return broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}
}
