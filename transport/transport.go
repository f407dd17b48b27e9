package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/transport/amqp"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/gochannel"
	"github.com/onceflow/onceflow/transport/kafka"
	"github.com/onceflow/onceflow/transport/nats"
	"github.com/onceflow/onceflow/transport/redisstream"
	"github.com/onceflow/onceflow/transport/sql"
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

// Config selects a transport and holds the settings of every kind; the
// chosen kind's broker package takes its own from it, and fills the zero
// ones with its defaults. The zero value is the in-process transport.
type Config struct {
	// Kind is one of [Kinds]; GoChannel when empty.
	Kind string
	// ServiceName names the consumer groups and queues (see
	// [broker.Names]) and the clients. Required by every kind but
	// GoChannel.
	ServiceName string
	// TopicPrefix is prepended to every topic on the broker and to the
	// consumer groups, so that environments and test runs can share one
	// broker. Callers keep using the plain topic names.
	TopicPrefix string
	// Topics are created at start-up on Kafka and NATS (a JetStream stream
	// each), with TopicPrefix, so that a message published before its
	// consumer group exists is kept. Other kinds, and NATS for a topic not
	// listed, create their topics on first use.
	Topics []string
	// KeyMetadata is the metadata entry holding a message's idempotency
	// key: Kafka keys messages by it, NATS gives it to the stream as the
	// message's id. The service passes its receiver's.
	KeyMetadata string
	// Logger receives the brokers' logs; nil discards them.
	Logger *slog.Logger

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
	// message, acked or not. It bounds how long a handler may be down
	// without losing messages.
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
	// RedisStreamMaxLen caps each stream at about this many entries,
	// dropping the oldest whether or not they were read; zero never trims.
	RedisStreamMaxLen int64

	// Pool is the PostgreSQL pool the SQL transport publishes through; its
	// subscribers open a pool of their own on its settings. Required by SQL.
	Pool *pgxpool.Pool
	// SQLPollInterval is the pause after a read that found no message.
	SQLPollInterval time.Duration
	// SQLBeginner opens the SQL transport's consumer transactions: the
	// service passes exactlyonce.ConsumerBeginner, so that transaction
	// mode's units of work join them. Nil: watermill-sql's own.
	SQLBeginner func(wsql.Conn) wsql.Beginner

	// Redelivery is that of the brokers that redeliver by time: SQL,
	// NATS and Redis Streams (each package's Config says how).
	broker.Redelivery
}

// Names are what the transport names its consumer groups, queues and
// streams after.
func (c Config) Names() broker.Names {
	return broker.Names{TopicPrefix: c.TopicPrefix, ServiceName: c.ServiceName}
}

// KafkaSASL authenticates every Kafka client of the transport: Mechanism
// is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or "" for none, with User and
// Password.
type KafkaSASL struct {
	Mechanism, User, Password string
}

// brokers are the kinds [New] opens, the default first, each with the
// one function that maps a Config into its broker package's Config and
// opens it. Removing a broker is removing its package and its entry.
var brokers = []struct {
	kind string
	open func(context.Context, Config) (*broker.Transport, error)
}{
	{GoChannel, func(_ context.Context, c Config) (*broker.Transport, error) {
		return gochannel.New(gochannel.Config{TopicPrefix: c.TopicPrefix, Logger: c.Logger}), nil
	}},
	{Kafka, func(ctx context.Context, c Config) (*broker.Transport, error) {
		return kafka.New(ctx, kafka.Config{Brokers: c.KafkaBrokers, ServiceName: c.ServiceName, TopicPrefix: c.TopicPrefix,
			Topics: c.Topics, Partitions: c.KafkaPartitions, SASL: kafka.SASL(c.KafkaSASL), TLS: c.KafkaTLS,
			KeyMetadata: c.KeyMetadata, Logger: c.Logger})
	}},
	{AMQP, func(ctx context.Context, c Config) (*broker.Transport, error) {
		return amqp.New(ctx, amqp.Config{URL: c.AMQPURL, ServiceName: c.ServiceName, TopicPrefix: c.TopicPrefix,
			ConnectTimeout: c.AMQPConnectTimeout, Logger: c.Logger})
	}},
	{SQL, func(ctx context.Context, c Config) (*broker.Transport, error) {
		return sql.New(ctx, sql.Config{Pool: c.Pool, ServiceName: c.ServiceName, TopicPrefix: c.TopicPrefix,
			PollInterval: c.SQLPollInterval, Redelivery: c.Redelivery, Beginner: c.SQLBeginner, Logger: c.Logger})
	}},
	{NATS, func(ctx context.Context, c Config) (*broker.Transport, error) {
		return nats.New(ctx, nats.Config{URL: c.NATSURL, ServiceName: c.ServiceName, TopicPrefix: c.TopicPrefix,
			Topics: c.Topics, MaxAge: c.NATSMaxAge, Redelivery: c.Redelivery, KeyMetadata: c.KeyMetadata, Logger: c.Logger})
	}},
	{RedisStream, func(ctx context.Context, c Config) (*broker.Transport, error) {
		return redisstream.New(ctx, redisstream.Config{URL: c.RedisStreamURL, Username: c.RedisStreamUsername,
			Password: c.RedisStreamPassword, TLS: c.RedisStreamTLS, ServiceName: c.ServiceName, TopicPrefix: c.TopicPrefix,
			MaxLen: c.RedisStreamMaxLen, Redelivery: c.Redelivery, Logger: c.Logger})
	}},
}

// Kinds lists every kind [Config.Kind] accepts, the default first.
var Kinds = kinds()

func kinds() []string {
	names := make([]string, len(brokers))
	for i, b := range brokers {
		names[i] = b.kind
	}
	return names
}

// New opens the transport cfg.Kind names, with its broker package's
// constructor: it connects to the broker and, on Kafka and NATS, creates
// [Config.Topics]. Its errors are the broker package's, one line each,
// naming the settings by what they are; see [broker.URLError] and
// [broker.ConnectError] for those a caller tells apart.
func New(ctx context.Context, cfg Config) (*broker.Transport, error) {
	kind := cfg.Kind
	if kind == "" {
		kind = GoChannel
	}
	for _, b := range brokers {
		if b.kind == kind {
			return b.open(ctx, cfg)
		}
	}
	return nil, fmt.Errorf("unknown transport %q: use one of %s", cfg.Kind, strings.Join(Kinds, ", "))
}
