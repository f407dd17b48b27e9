package flow

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// waitingStore is the receiver's store in a round with the receiver on: it
// adds up how long the receiver waits on each Claim, Complete and Release,
// the calls a delivery waits for before its ack. Extend, the heartbeat,
// runs beside the handler and is passed through untimed.
type waitingStore struct {
	stores.Store
	waited *atomic.Int64 // nanoseconds
}

func (s waitingStore) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	defer s.since(time.Now())
	return s.Store.Claim(ctx, key, fingerprint, lease)
}

func (s waitingStore) Complete(ctx context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	defer s.since(time.Now())
	return s.Store.Complete(ctx, key, token, result, ttl)
}

func (s waitingStore) Release(ctx context.Context, key string, token stores.Token) error {
	defer s.since(time.Now())
	return s.Store.Release(ctx, key, token)
}

func (s waitingStore) since(start time.Time) { s.waited.Add(int64(time.Since(start))) }
