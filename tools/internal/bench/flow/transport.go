package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv/kfakebroker"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/cache"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/transport"
)

// Default sizes of a transport round: Kafka needs about 20,000 messages for
// a stable figure; RabbitMQ and PostgreSQL are slower per message.
const (
	DefaultKafkaMessages = 20000
	DefaultMessages      = 5000
	DefaultPartitions    = 4 // the service's KAFKA_PARTITIONS
	// DefaultInFlight is the service's default HANDLER_CONCURRENCY.
	DefaultInFlight = 16
)

// recordTTL is how long a round's idempotency records stay in Redis: long
// enough for any round, short enough not to fill a shared server.
const recordTTL = 10 * time.Minute

// TransportOptions selects the transport a [TransportBench] measures and
// the size of its rounds. Zero sizes take the defaults above.
type TransportOptions struct {
	// Kind is "kafka", "amqp", "sql", "nats", "redisstream" or "gochannel".
	Kind string
	// KafkaBrokers are the seed brokers of Kafka. When empty on kafka, the
	// bench starts an in-process broker of its own (internal/testenv/brokerenv/kfakebroker)
	// on a free loopback port and stops it on Close.
	KafkaBrokers []string
	// AMQPURL is RabbitMQ's URL. Required by amqp.
	AMQPURL string
	// PostgresURL is a postgres:// URL; the bench works in a schema of its
	// own there. Required by sql.
	PostgresURL string
	// NATSURL is NATS with JetStream. Required by nats; each round's
	// streams are deleted after it.
	NATSURL string
	// RedisStreamURL is the Redis of the streams. Required by
	// redisstream; each round's streams are deleted after it.
	RedisStreamURL string
	// Redis keeps the receiver's records (the Redis store). Required; the
	// bench does not close it.
	Redis redis.UniversalClient
	// Messages is the number of unique messages per round. Default
	// DefaultKafkaMessages on kafka, DefaultMessages on the others.
	Messages int
	// Duplicates is the number of extra copies of those messages per round
	// (at most Messages), each published copyLag messages after its
	// original. Default 0.
	Duplicates int
	// Partitions is the partition count of each Kafka topic, the unit of
	// parallel consumption there. Default DefaultPartitions. Ignored by
	// the other kinds.
	Partitions int
	// Consumers is the number of routers consuming in one consumer group,
	// as replicas of the service would (on RabbitMQ each holds InFlight
	// messages; on sql they take turns; on Kafka they split the
	// partitions, after a rebalance). Default 1; gochannel allows only 1,
	// as its subscribers each receive every message.
	Consumers int
	// InFlight is how many messages each consumer's subscriber hands out
	// at once, as HANDLER_CONCURRENCY sets it in the service. Default
	// DefaultInFlight; the sql transport holds one whatever it is.
	InFlight int
	// Logger receives the transport's and routers' logs; nil discards them.
	Logger *slog.Logger
}

// TransportBench measures how many messages per second a transport
// delivers to a router with a no-op handler, with the idempotent receiver
// (Redis store) on or off, everything else equal.
type TransportBench struct {
	opts      TransportOptions
	keyPrefix string         // of the receiver's records in Redis
	schema    *schema        // sql only
	cluster   *kfake.Cluster // kafka without brokers given only
	borrowed  bool           // schema and cluster are another bench's (Sized)
	// peers are the record store's server and the broker, where they
	// run on this machine, which a profiled round reads the CPU of.
	peers map[string][]int
}

// NewTransportBench checks opts, fills its defaults and, on sql, creates the
// bench's schema. The caller closes the bench.
func NewTransportBench(ctx context.Context, opts TransportOptions) (*TransportBench, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &TransportBench{opts: opts, keyPrefix: "bench:flow:" + shortID() + ":",
		peers: bench.FindPeers(StoreServer, BrokerCommand(opts.Kind))}
	switch {
	case opts.Kind == transport.SQL:
		if b.schema, err = openSchema(ctx, opts.PostgresURL, "bench_flow_"); err != nil {
			return nil, err
		}
	case opts.Kind == transport.Kafka && len(opts.KafkaBrokers) == 0:
		if b.cluster, err = kfakebroker.NewCluster("127.0.0.1:0", "onceflow-bench"); err != nil {
			return nil, fmt.Errorf("starting the in-process Kafka broker: %w", err)
		}
		b.opts.KafkaBrokers = b.cluster.ListenAddrs()
	}
	return b, nil
}

func (o TransportOptions) withDefaults() (TransportOptions, error) {
	if o.Messages == 0 {
		o.Messages = DefaultMessages
		if o.Kind == transport.Kafka {
			o.Messages = DefaultKafkaMessages
		}
	}
	if o.Partitions == 0 {
		o.Partitions = DefaultPartitions
	}
	if o.Consumers == 0 {
		o.Consumers = 1
	}
	if o.InFlight == 0 {
		o.InFlight = DefaultInFlight
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	need := func(ok bool, what string) {
		if !ok {
			errs = append(errs, errors.New(what))
		}
	}
	switch o.Kind {
	case transport.Kafka:
	case transport.AMQP:
		need(o.AMQPURL != "", "amqp needs a URL")
	case transport.SQL:
		need(o.PostgresURL != "", "sql needs a PostgreSQL URL")
	case transport.NATS:
		need(o.NATSURL != "", "nats needs a URL")
	case transport.RedisStream:
		need(o.RedisStreamURL != "", "redisstream needs a URL")
	case transport.GoChannel:
		need(o.Consumers == 1, "gochannel allows one consumer")
	default:
		return o, fmt.Errorf("unknown transport %q: use one of %s", o.Kind, strings.Join(transport.Kinds, ", "))
	}
	need(o.Redis != nil, "missing Redis client")
	need(o.Messages > 0 && o.Partitions > 0 && o.Consumers > 0 && o.InFlight > 0, "sizes must be positive")
	need(o.Duplicates >= 0 && o.Duplicates <= o.Messages, "duplicates must be between 0 and the number of messages")
	return o, errors.Join(errs...)
}

// Round publishes Messages plus Duplicates messages to a fresh topic and
// consumes them through Consumers routers whose handler does nothing, with
// the receiver on or off, InFlight messages in flight per consumer. It
// returns the messages acked per second from the first delivery to the
// last ack (copies included), and fails if a delivery stalls for a minute.
// Publishing precedes consuming on every kind but gochannel, which holds no
// messages: there the publishers run with the consumers, as the
// transport's backpressure wants.
func (b *TransportBench) Round(ctx context.Context, receiver bool) (float64, error) {
	t, err := b.RoundWith(ctx, RoundOptions{Receiver: receiver})
	return t.Rate, err
}

// RoundOptions is what one round of a [TransportBench] changes.
type RoundOptions struct {
	// Receiver puts the idempotent receiver in front of the handler.
	Receiver bool
	// Floor puts the Redis floor in front of it instead (see
	// bench.RedisFloorMiddleware): what guarding a message with the
	// Redis store must cost at least.
	Floor bool
	// InFlight, when positive, is how many messages each consumer holds
	// at once in this round, instead of the bench's InFlight: what
	// HANDLER_CONCURRENCY sets in the service.
	InFlight int
	// Profile reads where the round's CPU went (RoundTimes.CPU): this
	// process's by its CPU profile, the record store's server's and the
	// broker's from their CPU times.
	Profile bool
}

// RoundTimes is what a round measured: its rate, and where its
// deliveries' time went.
type RoundTimes struct {
	// Rate is the round's deliveries per second, as Round returns it.
	Rate float64
	// Lanes is how many messages the round's consumers could hold at once:
	// InFlight per consumer, one on sql, whose subscribers hold one at a
	// time and whose consumers take turns.
	Lanes int
	// Handling is how long a delivery spent, on average, inside the
	// routers' middlewares (the receiver, when on) and the handler, which
	// only counts it. By Little's law the round's lanes were busy
	// Rate x Handling at a time on average (see Occupancy).
	Handling time.Duration
	// StoreWait is how long a delivery waited, on average, on the
	// receiver's store's Claims, Completes and Releases: time its lane
	// spent waiting on Redis rather than moving messages. Zero with the
	// receiver off.
	StoreWait time.Duration
	// Own is the rest of Handling: the receiver's own cost, as the lanes
	// paid it in this round, and the handler's.
	Own time.Duration
	// ClaimsPerBatch is how many Claims the receiver's store sent per
	// batch, on average (a Claim sent alone is a batch of one), and NaN
	// when it sent none (the receiver off).
	ClaimsPerBatch float64
	// Busy is the share of the machine's CPU time, over all its cores,
	// that was busy from the round's first delivery to its last ack (0 to
	// 1; brokers and other tenants of the machine included), and NaN where
	// the machine's CPU times cannot be read.
	Busy float64
	// Process is the share of the machine's CPU time this process ran
	// over the same span: the routers, the receiver, the in-process Kafka
	// broker and the service's instance, not the other brokers.
	Process float64
	// Delivered is how many deliveries the round counted, copies
	// included.
	Delivered int
	// CPU is what the same span cost in CPU, by who spent it, when the
	// round was profiled (RoundOptions.Profile): its Peers are the record
	// store's server (StoreServer) and the broker's processes
	// (BrokerCommand).
	CPU bench.CPUUse
}

// StoreServer is the command of the record store's server, Redis, whose
// processes a profiled round reads the CPU times of.
const StoreServer = "redis-server"

// BrokerCommand is the command of the processes of kind's broker, and ""
// where the broker runs in this process (kafka's in-process broker,
// gochannel): on redisstream, StoreServer, which keeps both the records
// and the streams; on sql, PostgreSQL's, its backends and the rest summed.
func BrokerCommand(kind string) string {
	switch kind {
	case transport.AMQP:
		return "beam.smp"
	case transport.NATS:
		return "nats-server"
	case transport.SQL:
		return "postgres"
	case transport.RedisStream:
		return StoreServer
	}
	return ""
}

// Occupancy is how many of the round's lanes held a message on average,
// by Little's law: deliveries per second times the time each spent.
func (t RoundTimes) Occupancy() float64 { return t.Rate * t.Handling.Seconds() }

// RoundWith runs a round as Round does, changed by o, and returns its rate
// with where its deliveries' time went.
func (b *TransportBench) RoundWith(ctx context.Context, o RoundOptions) (RoundTimes, error) {
	inFlight := b.opts.InFlight
	if o.InFlight > 0 {
		inFlight = o.InFlight
	}
	var cpu *bench.CPUMeter
	if o.Profile {
		cpu = bench.NewCPUMeter(true, b.peers)
	}
	t, err := b.round(ctx, o, inFlight, cpu)
	if err != nil {
		return RoundTimes{}, err
	}
	lanes := inFlight * b.opts.Consumers
	if b.opts.Kind == transport.SQL {
		lanes = 1
	}
	handling, wait := t.handlingPerDelivery(), t.storeWaitPerDelivery()
	busy, process := t.busy()
	use, _ := t.cpu.Use()
	return RoundTimes{Rate: t.rate(), Lanes: lanes, Handling: handling, StoreWait: wait, Own: max(0, handling-wait),
		ClaimsPerBatch: t.claimsPerBatch(), Busy: busy, Process: process, Delivered: int(t.delivered.Load()), CPU: use}, nil
}

// Sized returns a bench on b's brokers and schema whose rounds send
// messages unique messages and duplicates copies of them; b's Close
// closes what they share, its own nothing.
func (b *TransportBench) Sized(messages, duplicates int) (*TransportBench, error) {
	o := b.opts
	o.Messages, o.Duplicates = messages, duplicates
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	return &TransportBench{opts: o, keyPrefix: b.keyPrefix, schema: b.schema, cluster: b.cluster, borrowed: true, peers: b.peers}, nil
}

// Close drops the bench's schema and stops its Kafka broker, if any. Its
// records in Redis expire on their own (recordTTL).
func (b *TransportBench) Close() error {
	if b.borrowed {
		return nil
	}
	if b.cluster != nil {
		b.cluster.Close()
	}
	if b.schema != nil {
		return b.schema.close(context.Background())
	}
	return nil
}

// newReceiver is the receiver of one round: on a fresh store (see
// serviceStore), its waits and batches counted in tl; defaults otherwise.
func (b *TransportBench) newReceiver(tl *tally) (*receiver.Receiver, error) {
	s, err := serviceStore(b.opts.Redis, b.keyPrefix, tl.observeBatch)
	if err != nil {
		return nil, err
	}
	store := waitingStore{Store: s, waited: &tl.storeWait}
	return receiver.New(receiver.Config{Store: store, TTL: recordTTL, Logger: b.opts.Logger})
}

// serviceStore is the record store as the service sets it up by default
// with STORE=redis: the Redis store, batching concurrent Claims and
// Completes as a zero Config does (STORE_BATCH_SIZE's default), behind
// the local cache of completed records (DEDUP_CACHE_SIZE's default).
// observe, when not nil, is told the size of every batch it sends.
func serviceStore(client redis.UniversalClient, keyPrefix string, observe func(op string, calls int)) (stores.Store, error) {
	s, err := redisstore.New(client, redisstore.Config{KeyPrefix: keyPrefix, BatchObserver: observe})
	if err != nil {
		return nil, err
	}
	return cache.New(s, cache.Config{}), nil
}
