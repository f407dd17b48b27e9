package flow

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// RedisBound is what Redis costs one message on a partition (or queue)
// that is consumed serially: the receiver's Claim and Complete each take a
// round trip that the next message waits for.
type RedisBound struct {
	// RTT is the median round trip of a PING.
	RTT time.Duration
	// Pair is the median of a Claim followed by a Complete of a fresh key
	// on the Redis store: the receiver's cost for a unique message.
	Pair time.Duration
	// PerPartition is the most messages per second one serial partition
	// can handle with the receiver on, the handler and broker costing
	// nothing: one second over Pair.
	PerPartition float64
}

// Ratio is the bound on receiver-on over receiver-off throughput of a
// serially consumed partition that delivers off messages per second with
// the receiver off: each message then takes 1/off plus Pair.
func (r RedisBound) Ratio(off float64) float64 {
	if off <= 0 {
		return 0
	}
	perMessage := 1/off + r.Pair.Seconds()
	return (1 / perMessage) / off
}

// MeasureRedisBound measures n PINGs and n Claim+Complete pairs, one at a
// time, on client, and returns their medians.
func MeasureRedisBound(ctx context.Context, client redis.UniversalClient, n int) (RedisBound, error) {
	if n <= 0 {
		return RedisBound{}, errors.New("n must be positive")
	}
	pings := make([]time.Duration, n)
	for i := range pings {
		start := time.Now()
		if err := client.Ping(ctx).Err(); err != nil {
			return RedisBound{}, err
		}
		pings[i] = time.Since(start)
	}
	store := redisstore.New(client, redisstore.Config{KeyPrefix: "bench:bound:" + shortID() + ":"})
	pairs := make([]time.Duration, n)
	for i := range pairs {
		key := shortID()
		start := time.Now()
		c, err := store.Claim(ctx, key, []byte("f"), time.Minute)
		if err != nil {
			return RedisBound{}, err
		}
		if err := store.Complete(ctx, key, c.Token, nil, time.Minute); err != nil {
			return RedisBound{}, err
		}
		pairs[i] = time.Since(start)
	}
	b := RedisBound{RTT: median(pings), Pair: median(pairs)}
	b.PerPartition = 1 / b.Pair.Seconds()
	return b, nil
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
