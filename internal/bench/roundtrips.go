package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/middleware"
)

// RoundTripCounter is a go-redis hook that counts round trips: one per
// command, one per pipeline (however many commands it carries).
type RoundTripCounter struct{ n atomic.Int64 }

// Count returns the round trips so far.
func (c *RoundTripCounter) Count() int64 { return c.n.Load() }

// DialHook implements redis.Hook.
func (c *RoundTripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *RoundTripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *RoundTripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// RoundTrips measures Redis round trips per message through the receiver
// on a fresh store of backend b (Redis or RedisPlain): n unique messages, run one after another; with
// duplicate, the same n again after the counted unique pass is done, and
// only the copies are counted. A few messages run first, uncounted, so
// loading the store's scripts is not charged to a message.
func RoundTrips(env *Env, b Backend, n int, duplicate bool) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		client := NewRedisClient(env.RedisAddr)
		defer func() { _ = client.Close() }()
		counter := &RoundTripCounter{}
		client.AddHook(counter)
		s, closeStore, err := env.NewStoreOn(b, client)
		if err != nil {
			return 0, err
		}
		defer closeStore()
		r, err := middleware.NewReceiver(middleware.Config{Store: s, TTL: 10 * time.Minute})
		if err != nil {
			return 0, err
		}
		payload := []byte("payload")
		fp := fingerprint(payload)
		execAll := func(prefix string, count int, want middleware.Outcome) error {
			for i := range count {
				key := prefix + strconv.Itoa(i)
				res, err := r.Execute(ctx, "bench", key, fp,
					func(context.Context) ([]byte, error) { return payload, nil })
				if err != nil {
					return err
				}
				if res.Outcome != want {
					return fmt.Errorf("key %q: outcome %v, want %v", key, res.Outcome, want)
				}
			}
			return nil
		}
		if err := execAll(nextKeys(), 3, middleware.OutcomeProcessed); err != nil { // loads the scripts
			return 0, err
		}
		prefix, want := nextKeys(), middleware.OutcomeProcessed
		if duplicate {
			if err := execAll(prefix, n, want); err != nil {
				return 0, err
			}
			want = middleware.OutcomeDuplicate
		}
		before := counter.Count()
		if err := execAll(prefix, n, want); err != nil {
			return 0, err
		}
		return float64(counter.Count()-before) / float64(n), nil
	}
}
