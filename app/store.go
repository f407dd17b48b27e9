package app

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// idempotencyStore is the store the receiver uses, with what readiness and
// shutdown need of it.
type idempotencyStore struct {
	stores.Store
	ping  func(context.Context) error
	close func() error
	// pg is the store as itself when STORE=postgres, for its sweeper and
	// transaction mode; nil otherwise.
	pg *postgres.Store
	// rdb is STORE=redis's client, which also parks the poisoned messages
	// when there is no DATABASE_URL; nil otherwise.
	rdb redis.UniversalClient
}

// newStore builds the store STORE names on the backends already opened;
// observe, when not nil, is told the size of every batch it sends.
func newStore(cfg Config, pool *pgxpool.Pool, rdb redis.UniversalClient, observe func(op string, calls int)) (idempotencyStore, error) {
	unbatched := !cfg.batched()
	switch cfg.Store {
	case "redis":
		s, err := redisstore.New(rdb, redisstore.Config{
			KeyPrefix:    cfg.redisKeyPrefix(),
			WaitReplicas: cfg.RedisWaitReplicas, WaitTimeout: cfg.RedisWaitTimeout, BatchSize: cfg.StoreBatchSize, Unbatched: unbatched, BatchObserver: observe,
		})
		if err != nil {
			return idempotencyStore{}, err
		}
		return idempotencyStore{
			Store: s,
			ping:  func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
			close: rdb.Close,
			rdb:   rdb,
		}, nil
	case "postgres":
		s, err := postgres.New(pool, postgres.Config{BatchSize: cfg.StoreBatchSize, Unbatched: unbatched, BatchObserver: observe, Layout: postgres.Layout(cfg.PGRecordsLayout)})
		if err != nil {
			return idempotencyStore{}, fmt.Errorf("postgres store: %w", err)
		}
		return idempotencyStore{Store: s, ping: pool.Ping, close: func() error { return nil }, pg: s}, nil
	default:
		m := newMemoryStores(cfg)
		return idempotencyStore{Store: m, ping: func(context.Context) error { return nil }, close: m.Close}, nil
	}
}
