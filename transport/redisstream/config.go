package redisstream

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceflow/onceflow/transport/broker"
)

// Defaults that [Config] fills in for zero fields.
const (
	DefaultAckDeadline    = 30 * time.Second
	DefaultResendInterval = time.Second
)

// Config tunes the Redis Streams transport. URL and ServiceName are
// required; [New] fills the other zero fields with the defaults above and
// then validates.
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
	// AckDeadline is how long a delivered entry may stay unacknowledged
	// before another consumer of its group claims it from the pending list
	// of one that crashed. It should outlast everything a consumer does
	// with one delivery, retries included.
	AckDeadline time.Duration
	// ResendInterval is the pause before a subscriber hands a nacked
	// message to its handler again (holding up that subscriber
	// meanwhile).
	ResendInterval time.Duration
	// Logger receives the clients' logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	if c.AckDeadline == 0 {
		c.AckDeadline = DefaultAckDeadline
	}
	if c.ResendInterval == 0 {
		c.ResendInterval = DefaultResendInterval
	}
	return c
}

// Validate checks that c, its defaults filled, names a Redis and a
// service, a positive ack deadline and resend interval, and a stream
// length cap of zero or more.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("redisstream: missing URL"))
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("redisstream: missing service name"))
	}
	if c.AckDeadline < 0 || c.ResendInterval < 0 {
		errs = append(errs, fmt.Errorf("redisstream: ack deadline %v, resend interval %v: want each more than 0",
			c.AckDeadline, c.ResendInterval))
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
