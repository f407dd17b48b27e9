package flow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// removeStreams deletes what a round or an instance left on a broker of
// kind that keeps it: the NATS streams (on disk) and the Redis streams
// whose names begin with prefix. Other kinds keep nothing or clean up
// elsewhere.
func removeStreams(kind, natsURL, redisStreamURL, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch kind {
	case transport.NATS:
		return removeNATSStreams(ctx, natsURL, broker.NATSStream(prefix))
	case transport.RedisStream:
		return removeRedisKeys(ctx, redisStreamURL, prefix)
	}
	return nil
}

func removeNATSStreams(ctx context.Context, url, prefix string) error {
	nc, err := nats.Connect(url, nats.NoReconnect())
	if err != nil {
		return fmt.Errorf("removing the round's NATS streams: %w", err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.Context(ctx))
	if err != nil {
		return fmt.Errorf("removing the round's NATS streams: %w", err)
	}
	for name := range js.StreamNames(nats.Context(ctx)) {
		if strings.HasPrefix(name, prefix) {
			if err := js.DeleteStream(name, nats.Context(ctx)); err != nil {
				return fmt.Errorf("removing NATS stream %s: %w", name, err)
			}
		}
	}
	return nil
}

// removeRedisKeys unlinks every key whose name begins with prefix on the
// Redis at url.
func removeRedisKeys(ctx context.Context, url, prefix string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := bench.UnlinkKeys(ctx, c, prefix); err != nil {
		return fmt.Errorf("removing the Redis keys under %s: %w", prefix, err)
	}
	return nil
}
