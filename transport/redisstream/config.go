package redisstream

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"

	"github.com/onceflow/onceflow/transport/broker"
)

// Config tunes the Redis Streams transport. URL and ServiceName are
// required; [New] fills the other zero fields with [broker.Redelivery]'s
// defaults and then validates.
type Config struct {
	// URL is the Redis node holding the streams, e.g.
	// redis://127.0.0.1:6379/0 (redis://, rediss:// or unix://).
	URL string
	// Username and Password authenticate to Redis when URL names no user
	// or password.
	Username, Password string
	// TLS, when not nil, is the TLS configuration of a rediss:// URL (its
	// server name from the URL unless it sets one); nil: the system's
	// roots.
	TLS *tls.Config
	// ServiceName names the consumer groups (see
	// [broker.Names.ConsumerGroup]).
	ServiceName string
	// TopicPrefix is prepended to every stream key and to the consumer
	// groups, so that environments and test runs can share one Redis.
	// Callers keep using the plain topic names.
	TopicPrefix string
	// MaxLen caps each stream at about this many entries (XADD MAXLEN ~):
	// older entries are dropped whether or not every consumer group has
	// read them, so a backlog longer than the cap is lost. Zero, the
	// default, never trims: acknowledged entries stay until an operator
	// trims the stream.
	MaxLen int64
	// Redelivery: past the ack deadline a consumer of the group claims
	// an entry from the pending list of one that crashed; a nacked entry
	// is handed to its handler again after the resend interval, in the
	// slot it holds.
	broker.Redelivery
	// Logger receives the clients' logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	c.Redelivery = c.Redelivery.WithDefaults()
	return c
}

// Validate checks that c, its defaults filled, names a Redis and a
// service, a positive [broker.Redelivery], and a stream length cap of
// zero or more.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("redisstream: missing URL"))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("redisstream: missing service name"))
	}
	if err := c.Redelivery.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("redisstream: %w", err))
	}
	if c.MaxLen < 0 {
		errs = append(errs, fmt.Errorf("redisstream: stream length cap %d, want zero (no trimming) or more", c.MaxLen))
	}
	return errors.Join(errs...)
}

// names are what the transport names its consumer groups after.
func (c Config) names() broker.Names {
	return broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}
}
