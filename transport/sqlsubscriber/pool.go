package sqlsubscriber

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// consumerConns caps the subscribers' own pool. Each subscriber holds one
// connection at a time, opened on demand; the cap only bounds a service
// with very many handlers.
const consumerConns = 32

// OpenConsumerPool opens a pool for watermill-sql subscribers on pool's
// settings, capped at 32 connections and opened on demand. A subscriber
// holds its connection for a whole batch (or while it waits for a
// replica's lock, or for a nacked message's resend): on the service's pool
// subscribers would starve the handlers' own queries. The caller closes it
// after the subscribers.
func OpenConsumerPool(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Pool, error) {
	pcfg := pool.Config()
	pcfg.MaxConns, pcfg.MinConns, pcfg.MinIdleConns = consumerConns, 0, 0
	consumers, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the SQL subscribers' pool: %w", err)
	}
	return consumers, nil
}
