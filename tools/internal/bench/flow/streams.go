package flow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/transport"
	"github.com/onceflow/onceflow/tools/internal/bench"
)

// removeStreams deletes what a round left on a broker that keeps it: the
// NATS streams (on disk) and the Redis streams whose names begin with the
// round's topic prefix. Other kinds keep nothing or clean up elsewhere.
func removeStreams(o TransportOptions, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch o.Kind {
	case transport.NATS:
		return removeNATSStreams(ctx, o.NATSURL, transport.NATSStream(prefix))
	case transport.RedisStream:
		return removeRedisStreams(ctx, o.RedisStreamURL, prefix)
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

func removeRedisStreams(ctx context.Context, url, prefix string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := bench.UnlinkKeys(ctx, c, prefix); err != nil {
		return fmt.Errorf("removing the round's Redis streams: %w", err)
	}
	return nil
}
