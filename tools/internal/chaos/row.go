package chaos

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/broker"
)

// Services are what the rows of a test run share: the built binary and
// the addresses of the brokers and stores.
type Services struct {
	Bin      string
	Kafka    *Kafka // the in-process broker; nil when no row uses kafka
	AMQPURL  string
	NATSURL  string
	RedisURL string // redis://host:port/db: the records of STORE=redis
	// StreamURL is the Redis of TRANSPORT=redisstream, set apart from
	// RedisURL so that an outage of one is not one of the other.
	StreamURL string
}

// Setup is one row's configuration.
type Setup struct {
	Transport string   // kafka, amqp, sql, nats or redisstream
	Store     string   // postgres or redis
	Mode      string   // transaction or lease
	Env       []string // further KEY=VALUE settings, overriding the defaults
	// NoEffectKeys takes the receiver's effect keys away from the
	// handlers (CHAOS_NO_EFFECT_KEYS): their charges at the provider and
	// their ledger rows carry no key, which measures what the keys close.
	NoEffectKeys bool
	// Mixed runs the ledger's routes (notify, receipt) in transaction
	// mode, their own (testdomain.ModesSetting), beside the charge route,
	// which calls the provider, in Mode.
	Mixed bool
	// StoreLinks puts a Link of its own between each instance and the
	// record store (Row.StoreLink), for faults on one instance's path.
	StoreLinks bool
	// ProviderLink puts a Link between the instances and the provider
	// (Row.ProviderLink).
	ProviderLink bool
}

// RowDefaults are the settings every instance runs with unless Setup.Env
// overrides them: a short handler timeout and lease, so that a killed
// instance's claims are taken over within seconds; and an API without
// keys, which the HTTP rows call as one anonymous client.
var RowDefaults = []string{"HANDLER_TIMEOUT=2s", "DEDUP_LEASE=4s", "RETRY_INTERVAL=50ms",
	"DATABASE_MAX_CONNS=8", "SHUTDOWN_TIMEOUT=10s", "LOG_LEVEL=info", "ALLOW_ANONYMOUS=true"}

// Row is one scenario x transport x mode: its own topic prefix, service
// name and PostgreSQL schema (the ledger, the postgres store and the sql
// transport live there), its provider, its instances and its producer. Everything it
// starts is stopped when the test ends; when the test fails the tail of
// every instance's log is printed.
type Row struct {
	Setup
	DatabaseURL string
	Prefix      string // TOPIC_PREFIX
	// ProducerAMQPURL is where the producer reaches RabbitMQ: Services'
	// AMQPURL unless a row cuts the instances off but not the producer.
	ProducerAMQPURL string
	Instances       []*Instance
	// Victim is the index of the instance a fault hits, whose /readyz an
	// outage probes: the first unless the row says otherwise.
	Victim int
	// ProviderLink is the Link the instances reach the provider through,
	// with Setup.ProviderLink.
	ProviderLink *Link

	t   testing.TB
	svc Services
	// provider is the row's provider, its charges in a schema of its own.
	provider *provider.Provider
	// ledgerDB reads the ledger at DatabaseURL, opened at the first read
	// (a row may point DatabaseURL at a server of its own first) and kept:
	// rows poll their figures many times a second.
	mu       sync.Mutex
	ledgerDB *pgxpool.Pool

	env        []string
	storeLinks []*Link // by instance, with StoreLinks
	dir        string  // instance logs; removed after the failure report reads them
}

// NewRow prepares a row of setup for t.
func NewRow(t testing.TB, svc Services, setup Setup) *Row {
	t.Helper()
	id := strings.ToLower(testenv.NewID()[:8])
	r := &Row{Setup: setup, DatabaseURL: testenv.PostgresSchema(t), Prefix: "chaos_" + id + "_", t: t, svc: svc, dir: t.TempDir()}
	r.ProducerAMQPURL = svc.AMQPURL
	r.provider = startProvider(t, filepath.Join(r.dir, "provider.log"))
	providerURL := r.provider.URL
	if setup.ProviderLink {
		r.ProviderLink = NewLink(t, "provider", strings.TrimPrefix(providerURL, "http://"))
		providerURL = "http://" + r.ProviderLink.Addr
	}
	r.env = append([]string{testdomain.ProviderSetting + "=" + providerURL, "TRANSPORT=" + setup.Transport, "STORE=" + setup.Store, "DEDUP_MODE=" + setup.Mode,
		"DATABASE_URL=" + r.DatabaseURL, "TOPIC_PREFIX=" + r.Prefix, "SERVICE_NAME=onceflow_" + id}, RowDefaults...)
	if setup.Mixed {
		r.env = append(r.env, testdomain.ModesSetting+"="+testdomain.NotifyRoute+"=transaction,"+testdomain.ReceiptRoute+"=transaction")
	}
	switch setup.Transport {
	case "kafka":
		r.env = append(r.env, "KAFKA_BROKERS="+strings.Join(svc.Kafka.Brokers(), ","))
	case "amqp":
		r.env = append(r.env, "AMQP_URL="+svc.AMQPURL)
		t.Cleanup(func() { deleteAMQP(svc.AMQPURL, r.Prefix, "onceflow_"+id) })
	case "nats":
		r.env = append(r.env, "NATS_URL="+svc.NATSURL)
		brokerenv.DeleteNATSStreamsOnCleanup(t, svc.NATSURL, broker.NATSStream(r.Prefix))
	case "redisstream":
		r.env = append(r.env, "REDIS_STREAM_URL="+svc.StreamURL)
		deleteStreamsOnCleanup(t, svc.StreamURL, r.Prefix)
	}
	if setup.Store == "redis" {
		r.env = append(r.env, "REDIS_URL="+svc.RedisURL)
	}
	if setup.NoEffectKeys {
		r.env = append(r.env, "CHAOS_NO_EFFECT_KEYS=true")
	}
	r.env = append(r.env, setup.Env...)
	t.Cleanup(func() {
		r.mu.Lock()
		if r.ledgerDB != nil {
			r.ledgerDB.Close()
		}
		r.mu.Unlock()
	})
	t.Cleanup(func() {
		for _, i := range r.Instances {
			i.Stop()
		}
		if t.Failed() {
			for _, i := range r.Instances {
				t.Logf("last lines of %s's log:\n%s", i.Name, tail(i.LogPath, 25))
			}
		}
	})
	return r
}

// Start adds n instances and starts them.
func (r *Row) Start(n int) {
	r.t.Helper()
	for range n {
		name := fmt.Sprintf("instance-%d", len(r.Instances)+1)
		env := r.env
		if r.StoreLinks {
			env = r.linkStore(name)
		}
		i, err := NewInstance(name, r.svc.Bin, filepath.Join(r.dir, name+".log"), env)
		if err != nil {
			r.t.Fatal(err)
		}
		r.Instances = append(r.Instances, i)
		if err := i.Start(time.Minute); err != nil {
			r.t.Fatal(err)
		}
	}
}

// linkStore starts a Link from the instance name to the record store and
// returns the row's settings with the store's URL through it.
func (r *Row) linkStore(name string) []string {
	raw, setting := r.DatabaseURL, "DATABASE_URL"
	if r.Store == "redis" {
		raw, setting = r.svc.RedisURL, "REDIS_URL"
	}
	u, err := url.Parse(raw)
	if err != nil {
		r.t.Fatal(err)
	}
	link := NewLink(r.t, name+"-store", u.Host)
	r.storeLinks = append(r.storeLinks, link)
	u.Host = link.Addr
	return append(slices.Clip(r.env), setting+"="+u.String())
}

// StoreLink is the Link between the i-th instance (from 0) and the record
// store; the row's Setup has StoreLinks.
func (r *Row) StoreLink(i int) *Link { return r.storeLinks[i] }

// IDs returns n request ids of this row's own.
func (r *Row) IDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("req-%s%d", r.Prefix, i)
	}
	return ids
}

// Publish sends copies of each request id to the row's TopicRequested with
// the plain-Watermill producer of its transport, from 8 goroutines, and
// returns how many it sent.
func (r *Row) Publish(ctx context.Context, ids []string, copies int) (int, error) {
	pub, err := r.publisher()
	if err != nil {
		return 0, err
	}
	defer pub.Close()
	return Publish(ctx, pub, r.requested(), ids, copies, 8)
}

// requested is the row's TopicRequested on the broker, its prefix
// included.
func (r *Row) requested() string {
	return r.Prefix + testdomain.TopicRequested
}

// publisher is the plain-Watermill producer of the row's transport, on
// the row's database, broker or ProducerAMQPURL. Close it when done.
func (r *Row) publisher() (message.Publisher, error) {
	var brokers []string
	addr := r.DatabaseURL
	switch r.Transport {
	case "kafka":
		brokers = r.svc.Kafka.Brokers()
	case "amqp":
		addr = r.ProducerAMQPURL
	case "nats":
		addr = r.svc.NATSURL
	case "redisstream":
		addr = r.svc.StreamURL
	}
	return NewPublisher(r.Transport, addr, brokers)
}

// Ledger reads the row's ledger and counts its provider's charges.
func (r *Row) Ledger() (Figures, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := r.ledger()
	if err != nil {
		return Figures{}, err
	}
	f, err := ReadLedger(ctx, db)
	if err != nil {
		return f, err
	}
	f.Provider, err = r.provider.Counts(ctx)
	return f, err
}

// ledger returns the pool that reads the ledger, opening it the first
// time: it connects when first used, and again after its server restarts.
func (r *Row) ledger() (*pgxpool.Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ledgerDB == nil {
		cfg, err := pgxpool.ParseConfig(r.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("reading the ledger: %w", err)
		}
		cfg.MaxConns = 2
		if r.ledgerDB, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			return nil, fmt.Errorf("reading the ledger: %w", err)
		}
	}
	return r.ledgerDB, nil
}

// ErrStalled is WaitFinished's error for a row that stopped making
// progress or did not finish within its bound.
var ErrStalled = fmt.Errorf("stalled")

// StallAfter is how long the ledger may stay unchanged, with requests
// still missing, before WaitFinished calls the row stalled.
const StallAfter = time.Minute

// WaitFinished waits until unique requests are all charged and notified
// and the ledger's counts have not changed for stable. It gives up with
// ErrStalled and the last figures when the counts have not moved for
// StallAfter while requests are missing, or after within in all. It also
// returns when every request was first seen charged and notified.
func (r *Row) WaitFinished(unique int, stable, within time.Duration) (Figures, time.Time, error) {
	deadline := time.Now().Add(within)
	var (
		last      Figures
		lastMove  = time.Now()
		completed time.Time
	)
	for {
		f, err := r.Ledger()
		now := time.Now()
		if err == nil {
			if f != last {
				last, lastMove = f, now
			}
			if f.Done(unique) {
				if completed.IsZero() {
					completed = now
				}
				if now.Sub(lastMove) >= stable {
					return f, completed, nil
				}
			}
		}
		if idle := now.Sub(lastMove); idle >= StallAfter || now.After(deadline) {
			return last, completed, fmt.Errorf("%w: %d of %d requests charged, %d notified; no change for %v (%v at most)",
				ErrStalled, last.Charges.IDs, unique, last.Notices.IDs, idle.Round(time.Second), within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// PeakRSS is the largest peak RSS of the row's instances.
func (r *Row) PeakRSS() int64 {
	var peak int64
	for _, i := range r.Instances {
		peak = max(peak, i.PeakRSS())
	}
	return peak
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// deleteStreamsOnCleanup deletes the row's streams from the Redis at url
// when t ends; a Redis of the row's own, gone by then, has nothing to
// delete.
func deleteStreamsOnCleanup(t testing.TB, url, prefix string) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	if c.Ping(t.Context()).Err() == nil {
		testenv.DeleteRedisKeysOnCleanup(t, c, prefix)
	}
}

// deleteAMQP deletes the durable exchanges and queues a service with this
// prefix and service name declares on the shared broker.
func deleteAMQP(url, prefix, service string) {
	exchanges, queues := app.Config{TopicPrefix: prefix, ServiceName: service}.AMQPDeclared(testdomain.Routes())
	withAMQPChannel(url, func(ch *amqp091.Channel) {
		for _, q := range queues {
			_, _ = ch.QueueDelete(q, false, false, false)
		}
		for _, e := range exchanges {
			_ = ch.ExchangeDelete(e, false, false)
		}
	})
}

// withAMQPChannel runs fn on a channel of a connection of its own to the
// broker at url; an unreachable broker runs nothing.
func withAMQPChannel(url string, fn func(*amqp091.Channel)) {
	conn, err := amqp091.Dial(url)
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	defer ch.Close()
	fn(ch)
}
