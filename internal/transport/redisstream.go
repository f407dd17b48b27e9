package transport

import (
	"context"
	"errors"

	"github.com/ThreeDotsLabs/watermill"
)

// newRedisStream is the Redis Streams transport.
func newRedisStream(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (Transport, error) {
	return Transport{}, errors.New("the redisstream transport is not built yet")
}
