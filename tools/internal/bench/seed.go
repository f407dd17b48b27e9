package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/middleware/consume"
)

// errSeedInProgress is what the seed-style middleware returns for a key whose
// lock another delivery holds.
var errSeedInProgress = errors.New("seed: key in progress")

// SeedMiddleware is the deduplication middleware a team writes first, kept
// as a reference: GET the result, SETNX a lock, run the handler, SET the
// result — three round trips per unique message, two keys per message, and
// check-then-set between the GET and the SETNX. Keys live under prefix.
func SeedMiddleware(client *redis.Client, prefix string, lease, ttl time.Duration) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			ctx := msg.Context()
			key := prefix + message.HandlerNameFromCtx(ctx) + ":" + msg.Metadata.Get(consume.MetadataKey)
			switch err := client.Get(ctx, key+":result").Err(); {
			case err == nil:
				return nil, nil // duplicate
			case !errors.Is(err, redis.Nil):
				return nil, fmt.Errorf("reading the result of %q: %w", key, err)
			}
			locked, err := client.SetNX(ctx, key+":lock", "1", lease).Result()
			if err != nil {
				return nil, fmt.Errorf("locking %q: %w", key, err)
			}
			if !locked {
				return nil, errSeedInProgress
			}
			out, err := h(msg)
			if err != nil {
				_ = client.Del(ctx, key+":lock").Err()
				return nil, err
			}
			if err := client.Set(ctx, key+":result", "1", ttl).Err(); err != nil {
				return nil, fmt.Errorf("storing the result of %q: %w", key, err)
			}
			return out, nil
		}
	}
}
