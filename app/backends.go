package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/migrations"
)

// connectTimeout bounds each backend's first connection at start-up.
const connectTimeout = 10 * time.Second

// openPostgres opens the pool on DATABASE_URL with DATABASE_MAX_CONNS
// connections and checks, within connectTimeout, that it answers.
func openPostgres(ctx context.Context, databaseURL string, maxConns int32) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	pcfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL (DATABASE_URL): %w", err)
	}
	return pool, nil
}

// migrate applies the migrations through pool: the records', the records
// table in PG_RECORDS_LAYOUT if they create it, then the domain's. It is
// safe from every replica at once (goose takes a session lock) and is
// bounded by ctx only: waiting for another replica's migration is not a
// connection timeout.
func migrate(ctx context.Context, pool *pgxpool.Pool, layout string, d domain.Domain) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, set := range migrationSets(layout, d) {
		if err := migrations.Up(ctx, db, set.opts...); err != nil {
			return fmt.Errorf("%s: %w", set.name, err)
		}
	}
	return nil
}

// openRedis returns a Cluster client for REDIS_ADDRS, else a single-node
// client for REDIS_URL, with their credentials and TLS (REDIS_USERNAME,
// REDIS_PASSWORD, REDIS_TLS, REDIS_TLS_CA_FILE), after checking it answers. Clients honour context
// deadlines, so the handler timeout also bounds a hung Redis, and their read
// timeout outlasts REDIS_WAIT_TIMEOUT.
func openRedis(ctx context.Context, cfg Config) (redis.UniversalClient, error) {
	var client redis.UniversalClient
	if len(cfg.RedisAddrs) > 0 {
		opts, err := cfg.redisClusterOptions()
		if err != nil {
			return nil, err
		}
		opts.ContextTimeoutEnabled, opts.ReadTimeout = true, readTimeout(cfg, 0)
		client = redis.NewClusterClient(opts)
	} else {
		opts, err := cfg.redisNodeOptions()
		if err != nil {
			return nil, err
		}
		opts.ContextTimeoutEnabled = true
		opts.ReadTimeout = readTimeout(cfg, opts.ReadTimeout)
		client = redis.NewClient(opts)
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("connecting to Redis (%s): %w", redisVar(cfg), err)
	}
	return client, nil
}

// goRedisReadTimeout is go-redis's read timeout when its option is zero.
const goRedisReadTimeout = 3 * time.Second

// readTimeout returns the client read timeout rt (as go-redis options hold
// it: 0 for its default, negative for none), raised when needed so that a
// WAIT of REDIS_WAIT_TIMEOUT, read in the same pipeline as Complete's
// script, is answered before the client gives up.
func readTimeout(cfg Config, rt time.Duration) time.Duration {
	if cfg.RedisWaitReplicas == 0 || rt < 0 {
		return rt
	}
	if rt == 0 {
		rt = goRedisReadTimeout
	}
	return max(rt, cfg.RedisWaitTimeout+time.Second)
}

func redisVar(cfg Config) string {
	if len(cfg.RedisAddrs) > 0 {
		return "REDIS_ADDRS=" + strings.Join(cfg.RedisAddrs, ",")
	}
	return "REDIS_URL"
}
