package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The kinds of transport [Config.Kind] names.
const (
	// GoChannel is the in-process transport: nothing to install, messages
	// live in the process.
	GoChannel = "gochannel"
	// Kafka is watermill-kafka on sarama.
	Kafka = "kafka"
	// AMQP is watermill-amqp on RabbitMQ.
	AMQP = "amqp"
	// SQL is watermill-sql on PostgreSQL through pgx.
	SQL = "sql"
	// NATS is watermill-nats on NATS JetStream.
	NATS = "nats"
	// RedisStream is Redis Streams, with watermill-redisstream's publisher
	// and entry format.
	RedisStream = "redisstream"
)

// Kinds lists every kind [Config.Kind] accepts, the default first.
var Kinds = []string{GoChannel, Kafka, AMQP, SQL, NATS, RedisStream}

// Defaults that [Config] fills in for zero fields.
const (
	DefaultKafkaPartitions    = 4
	DefaultAMQPConnectTimeout = 30 * time.Second
	DefaultSQLPollInterval    = 100 * time.Millisecond
	DefaultResendInterval     = time.Second
	DefaultAckDeadline        = 30 * time.Second
	DefaultNATSMaxAge         = 7 * 24 * time.Hour
)

// Config selects and tunes a transport. The zero value is the in-process
// transport; [New] fills the other zero fields with the defaults above and
// then checks what the chosen kind needs.
type Config struct {
	// Kind is one of [Kinds]; GoChannel when empty.
	Kind string
	// ServiceName names the consumer groups and queues (see
	// [ConsumerGroup]) and the Kafka client. Required by every kind but
	// GoChannel.
	ServiceName string
	// TopicPrefix is prepended to every topic on the broker and to the
	// consumer groups, so that environments and test runs can share one
	// broker. Callers keep using the plain topic names.
	TopicPrefix string
	// Topics are created at start-up on Kafka and NATS (a JetStream stream
	// each, see [NATSStream]), with TopicPrefix, so that a message
	// published before its consumer group exists is kept. Other kinds, and
	// NATS for a topic not listed, create their topics on first use.
	Topics []string

	// KafkaBrokers are the seed brokers, host:port. Required by Kafka.
	KafkaBrokers []string
	// KafkaPartitions is the partition count of the topics created.
	KafkaPartitions int
	// KafkaSASL authenticates the Kafka clients; the zero value does not.
	KafkaSASL KafkaSASL
	// KafkaTLS, when not nil, is the TLS configuration of every connection
	// to Kafka; nil connects in plaintext.
	KafkaTLS *tls.Config

	// AMQPURL is RabbitMQ, e.g. amqp://guest:guest@127.0.0.1:5672/.
	// Required by AMQP.
	AMQPURL string
	// AMQPConnectTimeout is how long [New] keeps retrying the first
	// connection to RabbitMQ.
	AMQPConnectTimeout time.Duration

	// NATSURL is the NATS server with JetStream, e.g.
	// nats://127.0.0.1:4222. Required by NATS.
	NATSURL string
	// NATSMaxAge is how long the streams the NATS transport creates keep a
	// message, acked or not (they retain by limits; see newNATS). It bounds
	// how long a handler may be down without losing messages.
	NATSMaxAge time.Duration

	// RedisStreamURL is the Redis node holding the streams, e.g.
	// redis://127.0.0.1:6379/0. Required by RedisStream.
	RedisStreamURL string
	// RedisStreamUsername and RedisStreamPassword authenticate to Redis
	// when RedisStreamURL names no user or password.
	RedisStreamUsername, RedisStreamPassword string
	// RedisStreamTLS, when not nil, is the TLS configuration of a
	// rediss:// RedisStreamURL (its server name from the URL unless it
	// sets one); nil: the system's roots.
	RedisStreamTLS *tls.Config
	// RedisStreamMaxLen caps each stream at about this many entries
	// (XADD MAXLEN ~): older entries are dropped whether or not every
	// consumer group has read them, so a backlog longer than the cap is
	// lost. Zero, the default, never trims: acknowledged entries stay
	// until an operator trims the stream.
	RedisStreamMaxLen int64

	// Pool is the PostgreSQL pool the SQL transport publishes through; its
	// subscribers open a pool of their own on its settings. Required by SQL.
	Pool *pgxpool.Pool
	// SQLPollInterval is the pause after a read that found no message.
	SQLPollInterval time.Duration
	// ResendInterval is the pause before the SQL transport hands out a
	// nacked message again (holding up its consumer group meanwhile), and
	// before a Redis Streams subscriber hands a nacked message to its
	// handler again (holding up that subscriber meanwhile).
	ResendInterval time.Duration
	// AckDeadline is how long a delivered message may stay unacknowledged
	// before the broker hands it out again: the SQL transport reads it
	// again, JetStream redelivers it (its ack wait), and on Redis Streams
	// another consumer claims it from the pending list of one that
	// crashed. It should outlast everything a consumer does with one
	// delivery, retries included.
	AckDeadline time.Duration

	// Logger receives the brokers' logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields filled.
func (c Config) withDefaults() Config {
	if c.Kind == "" {
		c.Kind = GoChannel
	}
	if c.KafkaPartitions == 0 {
		c.KafkaPartitions = DefaultKafkaPartitions
	}
	if c.AMQPConnectTimeout == 0 {
		c.AMQPConnectTimeout = DefaultAMQPConnectTimeout
	}
	if c.SQLPollInterval == 0 {
		c.SQLPollInterval = DefaultSQLPollInterval
	}
	if c.ResendInterval == 0 {
		c.ResendInterval = DefaultResendInterval
	}
	if c.AckDeadline == 0 {
		c.AckDeadline = DefaultAckDeadline
	}
	if c.NATSMaxAge == 0 {
		c.NATSMaxAge = DefaultNATSMaxAge
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks that c, its defaults filled, has what its kind needs.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	need := func(ok bool, what string) {
		if !ok {
			errs = append(errs, fmt.Errorf("the %s transport needs %s", c.Kind, what))
		}
	}
	switch c.Kind {
	case GoChannel:
		return nil
	case Kafka:
		need(len(c.KafkaBrokers) > 0, "brokers")
		need(c.KafkaPartitions > 0, "a positive partition count")
		if err := c.KafkaSASL.validate(); err != nil {
			errs = append(errs, err)
		}
	case AMQP:
		need(c.AMQPURL != "", "a URL")
		need(c.AMQPConnectTimeout > 0, "a positive connect timeout")
	case SQL:
		need(c.Pool != nil, "a PostgreSQL pool")
		need(c.SQLPollInterval > 0 && c.ResendInterval > 0 && c.AckDeadline > 0,
			"a positive poll interval, resend interval and ack deadline")
	case NATS:
		need(c.NATSURL != "", "a URL")
		need(c.AckDeadline > 0 && c.NATSMaxAge > 0, "a positive ack deadline and stream max age")
	case RedisStream:
		need(c.RedisStreamURL != "", "a URL")
		need(c.AckDeadline > 0, "a positive ack deadline")
		need(c.RedisStreamMaxLen >= 0, "a stream length cap of zero (no trimming) or more")
	default:
		return fmt.Errorf("unknown transport %q: use one of %s", c.Kind, strings.Join(Kinds, ", "))
	}
	need(c.ServiceName != "", "a service name")
	return errors.Join(errs...)
}
