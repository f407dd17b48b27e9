package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/cache"
	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// Backend names a store as the plan measures it.
type Backend string

// The backends. Redis and Postgres are set up as the service sets them up
// by default: the local cache of completed records in front (DEDUP_CACHE_SIZE)
// and concurrent calls batched (STORE_BATCH_SIZE). RedisPlain and
// PostgresPlain are the same stores with neither, so a comparison can show
// what the two add.
const (
	Memory        Backend = "memory"
	Redis         Backend = "redis"
	Postgres      Backend = "postgres"
	RedisPlain    Backend = "redis-plain"
	PostgresPlain Backend = "postgres-plain"
)

// Backends lists the backends the sweeps cover, in the order tables show
// them.
var Backends = []Backend{Memory, Redis, Postgres}

// ServiceBatchSize and ServiceCacheSize are the service's defaults of
// STORE_BATCH_SIZE and DEDUP_CACHE_SIZE, which Redis and Postgres measure
// with.
const (
	ServiceBatchSize = 64
	ServiceCacheSize = cache.DefaultSize
)

// EnvConfig says where the services are.
type EnvConfig struct {
	RedisAddr   string // host:port
	PostgresURL string // a database the run may create a schema in
}

// Env holds the connections a run measures through: a Redis client (up to
// 300 connections) and a pool (up to PostgresPoolSize) on a PostgreSQL
// schema of its own, migrated, dropped by Close; callers beyond those wait
// for a connection. Keys
// and rows are scoped by Prefix, so runs can share servers with tests.
type Env struct {
	Redis       *redis.Client
	RedisAddr   string
	Postgres    *pgxpool.Pool
	PostgresURL string // the URL of Postgres, search_path included
	Schema      string // the schema Postgres's records table lives in
	Prefix      string // unique to the run, for Redis keys
	base        string
}

// OpenEnv connects to the services, creates and migrates a schema of the
// run's own, and checks that both answer.
func OpenEnv(ctx context.Context, cfg EnvConfig) (_ *Env, err error) {
	id := randomID()
	e := &Env{RedisAddr: cfg.RedisAddr, Prefix: "bench:" + id + ":", Schema: "bench_" + id, base: cfg.PostgresURL}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Close())
		}
	}()
	e.Redis = NewRedisClient(cfg.RedisAddr)
	if err := e.Redis.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", cfg.RedisAddr, err)
	}
	conn, err := pgx.Connect(ctx, cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("postgresql: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{e.Schema}.Sanitize()); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", e.Schema, err)
	}
	e.PostgresURL, err = withSearchPath(cfg.PostgresURL, e.Schema)
	if err != nil {
		return nil, err
	}
	if err := migrations.UpURL(ctx, e.PostgresURL); err != nil {
		return nil, fmt.Errorf("migrating %s: %w", e.Schema, err)
	}
	pcfg, err := pgxpool.ParseConfig(e.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("postgresql url: %w", err)
	}
	pcfg.MaxConns = PostgresPoolSize
	if e.Postgres, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, fmt.Errorf("postgresql pool: %w", err)
	}
	return e, nil
}

// PostgresPoolSize bounds the run's PostgreSQL pool: the clients of the
// pgbench comparison and a few more, so that a run, pgbench beside it and
// the tests of a shared server stay within max_connections (100 by
// default).
const PostgresPoolSize = PostgresClients + 4

// NewRedisClient returns a client of addr sized for the sweeps' callers.
func NewRedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 300})
}

// BaseURL is the PostgreSQL URL the run was given, before its schema.
func (e *Env) BaseURL() string { return e.base }

// RecordsTable is the schema-qualified records table of the run.
func (e *Env) RecordsTable() string { return e.Schema + "." + postgres.DefaultTable }

// NewStore returns a store of backend b and the function that closes it.
// Every store the plan measures is made here, so switching a backend's
// options (a cache in front, batching) for the whole run is one edit.
func (e *Env) NewStore(b Backend) (stores.Store, func(), error) {
	return e.newStore(b, e.Redis, nil)
}

// NewStoreOn is NewStore with Redis reached through client (one with a
// hook that counts round trips, say). Other backends ignore client.
func (e *Env) NewStoreOn(b Backend, client *redis.Client) (stores.Store, func(), error) {
	return e.newStore(b, client, nil)
}

// newStore is NewStoreOn with observe, when not nil, told the size of
// every batch the store sends.
func (e *Env) newStore(b Backend, client *redis.Client, observe func(op string, calls int)) (stores.Store, func(), error) {
	batch, cached := ServiceBatchSize, true
	if b == RedisPlain || b == PostgresPlain {
		batch, cached = 1, false // each call alone
	}
	var s stores.Store
	switch b {
	case Memory:
		m := memory.New(memory.Config{MaxEntries: 1 << 20})
		return m, func() { _ = m.Close() }, nil
	case Redis, RedisPlain:
		r, err := redisstore.New(client, redisstore.Config{KeyPrefix: e.Prefix + "rec:", BatchSize: batch, BatchObserver: observe})
		if err != nil {
			return nil, nil, err
		}
		s = r
	case Postgres, PostgresPlain:
		p, err := postgres.New(e.Postgres, postgres.Config{Table: e.RecordsTable(), BatchSize: batch, BatchObserver: observe})
		if err != nil {
			return nil, nil, err
		}
		s = p
	default:
		return nil, nil, fmt.Errorf("unknown backend %q", b)
	}
	if cached {
		s = cache.New(s, cache.Config{Size: ServiceCacheSize})
	}
	return s, func() {}, nil
}

// Close drops the run's schema and keys and closes the connections.
func (e *Env) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if e.Postgres != nil {
		e.Postgres.Close()
	}
	if e.PostgresURL != "" {
		if conn, err := pgx.Connect(ctx, e.base); err != nil {
			errs = append(errs, err)
		} else {
			_, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{e.Schema}.Sanitize()+" CASCADE")
			errs = append(errs, err, conn.Close(ctx))
		}
	}
	if e.Redis != nil {
		errs = append(errs, e.deleteKeys(ctx), e.Redis.Close())
	}
	return errors.Join(errs...)
}

// deleteKeys unlinks every key under Prefix.
func (e *Env) deleteKeys(ctx context.Context) error { return UnlinkKeys(ctx, e.Redis, e.Prefix) }

// UnlinkKeys unlinks every key of c's database that begins with prefix. It
// scans many keys per call: the database also holds every record the
// run's rounds left to expire, and a round trip per hundred of those would
// take seconds.
func UnlinkKeys(ctx context.Context, c *redis.Client, prefix string) error {
	iter := c.Scan(ctx, 0, prefix+"*", 10_000).Iterator()
	batch := make([]string, 0, 1000)
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == cap(batch) {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}

func withSearchPath(raw, schema string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parsing the postgresql url: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
