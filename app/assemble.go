package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/internal/unguarded"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/stores/postgres"
)

// assembly is an App under construction, with what newApp's steps hand on
// to the ones after them.
type assembly struct {
	*App
	seams    seams
	reg      *prometheus.Registry
	outbox   consume.Outbox     // transaction mode's; nil when nothing runs in it
	api      message.Publisher  // the HTTP API's: through the outbox in DEDUP_MODE=transaction
	receiver *receiver.Receiver // DEDUP_MODE's: the HTTP face's and the routes' by default
	// receivers are the receivers by mode: receiver, and the other mode's
	// when a route chooses it (domain.Route.Mode).
	receivers map[domain.Mode]*receiver.Receiver
	domain    domain.Domain
	parts     *domain.Parts   // what the domain's Open built
	tracing   tracing         // the zero value when tracing is off
	signer    *signing.Signer // MESSAGE_SIGNING_SECRETS'; nil when unset
	poison    *poison.Console // the parked poisoned messages
}

// newApp builds an App step by step, each on what the steps before it
// built; on error it closes whatever was opened.
func newApp(ctx context.Context, cfg Config, d domain.Domain, logger *slog.Logger, sm seams) (_ *App, err error) {
	logger = withContextAttrs(logger)
	a := &App{cfg: cfg, logger: logger}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	if err = d.Validate(); err != nil {
		return nil, err
	}
	logger.Info("starting", "domain", d.Name, "config", cfg)
	for _, w := range cfg.Warnings() {
		logger.Warn(w)
	}
	if err = cfg.checkAccess(logger); err != nil {
		return nil, err
	}
	b := &assembly{App: a, seams: sm, reg: prometheus.NewRegistry(), domain: d}
	b.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, step := range []func(context.Context) error{
		b.openTracing,   // OTEL_EXPORTER_OTLP_*: first opened, last closed (flushed)
		b.openDatabase,  // DATABASE_URL, the records' and the domain's tables migrated (MIGRATE_ON_START) or checked
		b.openStore,     // STORE, with Redis's durability check and the postgres sweeper
		b.openDomain,    // the domain's routes and HTTP API, on the database
		b.connectBroker, // TRANSPORT, with the routes' topics
		b.openOutbox,    // DEDUP_MODE=transaction: the outbox and its relay
		b.openPoison,    // POISON_*: where poisoned messages are parked, and the console on them
		b.newReceiver,   // DEDUP_*: the idempotent receiver
		b.newRouter,     // the routes, each on its own subscriber, and the poison topic's reader
		b.newHTTP,       // the API on HTTP_ADDR; /metrics, the probes and the admin there or on INTERNAL_ADDR
	} {
		if err = step(ctx); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// openDatabase opens the PostgreSQL pool when DATABASE_URL is set and
// applies the migrations, or with MIGRATE_ON_START=false checks that none
// is pending.
func (b *assembly) openDatabase(ctx context.Context) (err error) {
	if b.cfg.DatabaseURL == "" {
		return nil
	}
	if b.pool, err = openPostgres(ctx, b.cfg.DatabaseURL, b.cfg.DatabaseMaxConns); err != nil {
		return err
	}
	b.closers = append(b.closers, func() error { b.pool.Close(); return nil })
	if !b.cfg.MigrateOnStart {
		return checkSchema(ctx, b.pool, b.domain)
	}
	return migrate(ctx, b.pool, b.cfg.PGRecordsLayout, b.domain)
}

// openStore opens the idempotency store STORE names: Redis after checking
// that it keeps records, PostgreSQL with the sweeper of expired ones; in
// lease mode either behind the local cache of completed records
// (DEDUP_CACHE_SIZE), with its batches' sizes counted (STORE_BATCH_SIZE).
func (b *assembly) openStore(ctx context.Context) (err error) {
	var rdb redis.UniversalClient
	if b.cfg.Store == "redis" {
		if rdb, err = openRedis(ctx, b.cfg); err != nil {
			return err
		}
	}
	var observe func(op string, calls int)
	if b.cfg.batched() {
		if observe, err = batchMetrics(b.reg); err != nil {
			return err
		}
	}
	if b.store, err = newStore(b.cfg, b.pool, rdb, observe); err != nil {
		return err
	}
	b.closers = append(b.closers, b.store.close)
	if b.seams.store != nil {
		b.store.Store = b.seams.store(b.store.Store)
	}
	if b.cfg.cached() {
		if b.store.Store, err = withCache(b.store.Store, b.cfg, b.reg); err != nil {
			return err
		}
	}
	if rdb != nil {
		if err = checkRedisVersion(ctx, b.cfg, rdb); err != nil {
			return err
		}
		if err = checkRedisDurability(ctx, b.cfg, rdb, b.reg, b.logger); err != nil {
			return err
		}
	}
	if b.store.pg != nil {
		if err = b.store.pg.CheckLayout(ctx); err != nil {
			return fmt.Errorf("PG_RECORDS_LAYOUT=%s: %w", b.cfg.PGRecordsLayout, err)
		}
		onPass, err := sweeperMetrics(b.reg)
		if err != nil {
			return err
		}
		b.sweeper = postgres.NewSweeper(b.store.pg, postgres.SweeperConfig{Logger: b.logger, PartitionWidth: b.cfg.PGPartitionWidth, OnPass: onPass})
		if err = b.sweeper.CreateAhead(ctx); err != nil {
			return fmt.Errorf("creating the partitions of the records table: %w", err)
		}
	}
	return nil
}

// connectBroker opens the transport TRANSPORT names, which on Kafka
// creates the topics of the routes, the poison topic and, when a route
// requeues, the requeue topic.
func (b *assembly) connectBroker(ctx context.Context) error {
	t, err := openTransport(ctx, b.cfg, b.pool, withOwnReaders(b.parts.Routes).Topics(), b.logger)
	if err != nil {
		return err
	}
	b.transport = t
	b.closers = append(b.closers, t.Close)
	if b.signer, err = b.cfg.signer(); err != nil {
		return err
	}
	b.api = b.publisher(t.Publisher())
	return nil
}

// publisher is pub as the service publishes the messages its routes
// consume: each with a producer span when tracing is on, and signed when
// MESSAGE_SIGNING_SECRETS is set.
func (b *assembly) publisher(pub message.Publisher) message.Publisher {
	return b.signer.Publisher(b.tracing.messages.Publisher(pub))
}

// openOutbox, when anything runs in transaction mode, routes the
// produced messages of what does through the outbox (the API's in
// DEDUP_MODE=transaction, the handlers' of the routes in that mode), and
// on a broker other than sql opens the relay that forwards them. The
// tables the outbox writes must exist before a transaction writes to them:
// every topic written is subscribed by this service, and the subscribers
// create them at start-up, the relay's before the router's.
func (b *assembly) openOutbox(ctx context.Context) error {
	if !b.cfg.inTransaction(b.parts.Routes) {
		return nil
	}
	direct := b.cfg.Transport == "sql"
	o := exactlyonce.Outbox{Topics: b.parts.Routes.Outputs(), Publisher: b.transport.Publisher(), TopicPrefix: b.cfg.TopicPrefix,
		Decorate: b.publisher, Logger: b.logger}
	if !direct {
		o.RelayTopic = b.cfg.TopicPrefix + outboxTopic
	}
	b.outbox = o.Write
	if b.cfg.DedupMode == string(domain.ModeTransaction) {
		b.api = o.UnitPublisher()
	}
	if direct {
		return nil
	}
	relay, consumers, err := newRelay(ctx, b.cfg, b.pool, b.publisher(b.transport.Publisher()), b.logger)
	if err != nil {
		return err
	}
	b.relay = relay
	b.closers = append(b.closers, func() error { consumers.Close(); return nil })
	return nil
}

// newReceiver is the idempotent receiver of each mode the service runs
// in, their outcomes counted on the registry: in lease mode on the store,
// in transaction mode in units of work that are PostgreSQL transactions.
//
// A context that asks for the service without its receiver (the bench's
// unguarded.With, which no setting reaches) gets the receiver that stands
// for none in every mode.
func (b *assembly) newReceiver(ctx context.Context) error {
	observer, err := receiverMetrics(b.reg, b.cfg.Store, b.parts.Routes)
	if err != nil {
		return err
	}
	b.receivers = map[domain.Mode]*receiver.Receiver{}
	for _, mode := range b.cfg.modes(b.parts.Routes) {
		if unguarded.On(ctx) {
			b.receivers[mode] = unguarded.Receiver()
			continue
		}
		rc := receiver.Config{
			Lease:        b.cfg.DedupLease,
			TTL:          b.cfg.DedupTTL,
			OnInProgress: receiver.InProgressPolicy(b.cfg.DedupOnInProgress),
			Wait:         b.cfg.DedupWait,
			OnStoreError: receiver.StoreErrorPolicy(b.cfg.DedupOnStoreError),
			Observer:     observer,
			Logger:       b.logger,
			// nil when tracing is off: no spans at all
			TracerProvider: b.tracing.provider,
		}
		if mode == domain.ModeTransaction {
			rc.Transactor = exactlyonce.Transactor{DB: b.pool, Store: b.store.pg}
		} else {
			rc.Store = b.store
		}
		if b.receivers[mode], err = receiver.New(rc); err != nil {
			return err
		}
	}
	b.receiver = b.receivers[domain.Mode(b.cfg.DedupMode)]
	return nil
}

// openDomain opens the domain on the database and the API's publisher
// (which publishes through whatever connectBroker and openOutbox set up:
// the domain's HTTP handlers publish only once the service serves), and
// checks its routes before anything is subscribed.
func (b *assembly) openDomain(ctx context.Context) (err error) {
	b.parts, err = b.domain.Open(ctx, domain.Deps{DB: b.pool, Publisher: apiPublisher{b}, Logger: b.logger})
	if err != nil {
		return fmt.Errorf("opening domain %s: %w", b.domain.Name, err)
	}
	if b.parts == nil {
		return fmt.Errorf("opening domain %s: Open returned no parts", b.domain.Name)
	}
	if b.parts.Close != nil {
		b.closers = append(b.closers, b.parts.Close)
	}
	return checkRoutes(b.parts.Routes, b.cfg)
}

// apiPublisher is the publisher the domain's HTTP API is given: b.api,
// once New has set it.
type apiPublisher struct{ b *assembly }

func (p apiPublisher) Publish(topic string, msgs ...*message.Message) error {
	return p.b.api.Publish(topic, msgs...)
}

// Close does nothing: the transport is the App's to close.
func (apiPublisher) Close() error { return nil }

// newRouter assembles the Watermill router with the routes and the poison
// topic's reader.
func (b *assembly) newRouter(context.Context) error {
	reader, err := b.poisonReader()
	if err != nil {
		return err
	}
	b.router, err = newRouter(routerParts{
		cfg: b.cfg, transport: b.transport, receivers: b.receivers, outbox: b.outbox,
		routes: b.parts.Routes, permanent: b.domain.Permanent, malformed: b.domain.Malformed, poison: reader,
		metrics: routerMetrics(b.reg), tracing: b.tracing.messages, signer: b.signer, logger: b.logger,
	})
	return err
}

// newHTTP builds the HTTP servers and binds their listeners, so that Addr
// and InternalAddr are known before Run.
func (b *assembly) newHTTP(context.Context) (err error) {
	keysAdmin, err := b.adminAPI()
	if err != nil {
		return err
	}
	b.server, b.ops, err = newHTTPServers(httpParts{
		cfg: b.cfg, api: b.parts.HTTP, keysAdmin: keysAdmin, receiver: b.receiver, router: b.router,
		store: b.store, broker: b.transport.Readiness(), reg: b.reg, tracing: b.tracing, logger: b.logger,
	})
	if err != nil {
		return err
	}
	if b.listener, err = net.Listen("tcp", b.cfg.HTTPAddr); err != nil {
		return fmt.Errorf("HTTP_ADDR=%q: %w", b.cfg.HTTPAddr, err)
	}
	if b.ops != nil {
		if b.opsListen, err = net.Listen("tcp", b.cfg.InternalAddr); err != nil {
			return fmt.Errorf("INTERNAL_ADDR=%q: %w", b.cfg.InternalAddr, err)
		}
	}
	return nil
}
