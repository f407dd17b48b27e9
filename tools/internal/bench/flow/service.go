package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv/kfakebroker"
	"github.com/onceflow/onceflow/internal/unguarded"
	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/transport"
)

// DefaultServiceRequests is the number of requests a service round
// publishes by default.
const DefaultServiceRequests = 2000

// ServiceKinds are the transports a [ServiceBench] runs on: every broker.
// The in-process transport has no broker a producer outside the instance
// could publish to.
var ServiceKinds = []string{transport.Kafka, transport.AMQP, transport.SQL, transport.NATS, transport.RedisStream}

// ServiceOptions configures a [ServiceBench].
type ServiceOptions struct {
	// Kind is one of ServiceKinds.
	Kind string
	// KafkaBrokers are the seed brokers of Kafka. When empty on kafka, the
	// bench starts an in-process broker of its own and stops it on Close.
	KafkaBrokers []string
	// AMQPURL, NATSURL and RedisStreamURL are the brokers of amqp, nats
	// and redisstream, each required by its kind.
	AMQPURL, NATSURL, RedisStreamURL string
	// PostgresURL is a postgres:// URL: the service's ledger (and the sql
	// transport's tables) live in a schema of the bench's own there,
	// migrated by the service as it starts. Required.
	PostgresURL string
	// RedisAddr is the Redis (host:port) of the idempotency records
	// (STORE=redis). Required.
	RedisAddr string
	// Requests is the number of requests per round. Default
	// DefaultServiceRequests.
	Requests int
	// DatabaseMaxConns, when positive, is the instances'
	// DATABASE_MAX_CONNS; zero leaves the service's default.
	DatabaseMaxConns int
	// Logger receives the instances' and routers' logs; nil discards them.
	Logger *slog.Logger
}

// ServiceBench measures the whole service on a broker: requests per second
// through one instance of it, as cmd/onceflow runs a domain, on the
// template's own (package testdomain: route charge, which charges the
// request at a provider the instance starts in process, then routes
// notify and receipt; the ledger in PostgreSQL, the idempotency records
// in Redis, every other setting at its default), while a producer
// publishes the requests' events to the broker with Watermill alone.
// Beside it, a plain
// Watermill router on the same transport whose handler only acks shows
// what the broker delivers when handling costs nothing.
//
// Each instance (one per HANDLER_CONCURRENCY a round asks for) and the
// plain consumer start at their first round and keep running, idle, until
// Stop: a round measures a running service, not its start.
type ServiceBench struct {
	opts      ServiceOptions
	schema    *schema
	cluster   *kfake.Cluster
	instances map[instanceKey]*instance
	plain     *plainConsumer
}

// NewServiceBench checks opts, fills its defaults and creates the bench's
// schema. The caller closes the bench.
func NewServiceBench(ctx context.Context, opts ServiceOptions) (*ServiceBench, error) {
	if opts.Requests == 0 {
		opts.Requests = DefaultServiceRequests
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	need := func(ok bool, what string) {
		if !ok {
			errs = append(errs, errors.New(what))
		}
	}
	switch opts.Kind {
	case transport.Kafka, transport.SQL:
	case transport.AMQP:
		need(opts.AMQPURL != "", "amqp needs a URL")
	case transport.NATS:
		need(opts.NATSURL != "", "nats needs a URL")
	case transport.RedisStream:
		need(opts.RedisStreamURL != "", "redisstream needs a URL")
	default:
		return nil, fmt.Errorf("unknown broker %q: use one of %s", opts.Kind, strings.Join(ServiceKinds, ", "))
	}
	need(opts.PostgresURL != "", "missing PostgreSQL URL")
	need(opts.RedisAddr != "", "missing Redis address")
	need(opts.Requests > 0, "requests must be positive")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b := &ServiceBench{opts: opts, instances: map[instanceKey]*instance{}}
	var err error
	if b.schema, err = openSchema(ctx, opts.PostgresURL, "bench_service_"); err != nil {
		return nil, err
	}
	if opts.Kind == transport.Kafka && len(opts.KafkaBrokers) == 0 {
		if b.cluster, err = kfakebroker.NewCluster("127.0.0.1:0", "onceflow-bench"); err != nil {
			return nil, errors.Join(fmt.Errorf("starting the in-process Kafka broker: %w", err), b.Close())
		}
		b.opts.KafkaBrokers = b.cluster.ListenAddrs()
	}
	return b, nil
}

// Round publishes Requests requests to the instance running with
// HANDLER_CONCURRENCY=concurrency, starting it first if it is not running,
// and returns once every request has been charged, noticed and given a
// receipt. Its rate is requests per second from the first call of the
// charge route's function to the last return of a route's function,
// checked against the ledger: exactly one charge, one notice and one
// receipt per request. Its Busy is the machine's over the same span;
// Lanes the concurrency.
func (b *ServiceBench) Round(ctx context.Context, concurrency int) (RoundTimes, error) {
	return b.roundOf(ctx, instanceKey{concurrency: concurrency})
}

// UnguardedRound is Round on an instance of the same service without its
// idempotent receiver (see package internal/unguarded): the same broker,
// handlers, ledger and checks, every delivery run as it comes. Beside
// Round it shows what the receiver costs the whole service.
func (b *ServiceBench) UnguardedRound(ctx context.Context, concurrency int) (RoundTimes, error) {
	return b.roundOf(ctx, instanceKey{concurrency: concurrency, unguarded: true})
}

func (b *ServiceBench) roundOf(ctx context.Context, k instanceKey) (RoundTimes, error) {
	in, err := b.start(ctx, k)
	if err != nil {
		return RoundTimes{}, err
	}
	return in.round(ctx, b.opts, b.schema, b.opts.Requests)
}

// Start starts the instance running with HANDLER_CONCURRENCY=concurrency,
// warmed up, if it is not running: what Round would do first.
func (b *ServiceBench) Start(ctx context.Context, concurrency int) error {
	_, err := b.start(ctx, instanceKey{concurrency: concurrency})
	return err
}

// instanceKey is what tells a bench's instances apart.
type instanceKey struct {
	concurrency int  // HANDLER_CONCURRENCY
	unguarded   bool // without the receiver
}

func (b *ServiceBench) start(ctx context.Context, k instanceKey) (*instance, error) {
	if k.concurrency < 1 {
		return nil, fmt.Errorf("concurrency %d, want at least 1", k.concurrency)
	}
	in := b.instances[k]
	if in == nil {
		if k.unguarded {
			ctx = unguarded.With(ctx)
		}
		var err error
		if in, err = startInstance(ctx, b.opts, b.schema, k.concurrency); err != nil {
			return nil, err
		}
		b.instances[k] = in
	}
	return in, nil
}

// PlainRound publishes Requests requests, as Round does, to a plain
// Watermill router on the same transport, whose subscriber holds
// DefaultInFlight messages and whose handler only acks (started at its
// first round), and returns the messages acked per second from the first
// delivery to the last ack.
func (b *ServiceBench) PlainRound(ctx context.Context) (RoundTimes, error) {
	if b.plain == nil {
		p, err := startPlain(ctx, b.opts, b.schema)
		if err != nil {
			return RoundTimes{}, err
		}
		b.plain = p
	}
	return b.plain.round(ctx, b.opts, b.opts.Requests)
}

// Stop stops the instances and the plain consumer and removes what they
// left on the brokers; the next round starts them again.
func (b *ServiceBench) Stop() error {
	var errs []error
	for k, in := range b.instances {
		errs = append(errs, in.stop(b.opts))
		delete(b.instances, k)
	}
	if b.plain != nil {
		errs = append(errs, b.plain.stop(b.opts))
		b.plain = nil
	}
	return errors.Join(errs...)
}

// Close stops what runs, drops the bench's schema and stops its Kafka
// broker, if any.
func (b *ServiceBench) Close() error {
	err := b.Stop()
	if b.cluster != nil {
		b.cluster.Close()
	}
	if b.schema != nil {
		err = errors.Join(err, b.schema.close(context.Background()))
	}
	return err
}

// busyOver is the machine's busy share between two readings and this
// process's share, NaN when either reading is missing or no tick passed.
func busyOver(first, last *bench.CPUTimes) (busy, process float64) {
	if first == nil || last == nil {
		return math.NaN(), math.NaN()
	}
	busy, process, ok := bench.BusyFraction(*first, *last)
	if !ok {
		return math.NaN(), math.NaN()
	}
	return busy, process
}

// removeBrokerState removes what an instance or the plain consumer, whose
// names begin with prefix, left on the brokers of o: its streams, its
// records in Redis, and on RabbitMQ exchanges and queues.
func removeBrokerState(o ServiceOptions, prefix string, exchanges, queues []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := []error{
		removeStreams(o.Kind, o.NATSURL, o.RedisStreamURL, prefix),
		removeRedisKeys(ctx, "redis://"+o.RedisAddr+"/0", prefix), // the records
	}
	if o.Kind == transport.AMQP {
		errs = append(errs, removeAMQP(o.AMQPURL, exchanges, queues))
	}
	return errors.Join(errs...)
}
