package bench

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// FloorContender is the contender of the memory-store router comparison
// that runs [FloorMiddleware] on a fresh memory store, in the same router
// and rounds as the receiver: the most the receiver's ratio to the router
// without middleware can be, whatever its own code costs.
const FloorContender = "floor"

// errFloorHeld is what the floor middleware returns for a key another
// delivery holds.
var errFloorHeld = errors.New("floor: key in progress")

// FloorMiddleware does, per message, only what the receiver on store s
// cannot do without: derive the key and the record key as the receiver
// does, fingerprint the payload (SHA-256, the receiver's default), Claim,
// run the handler, and Complete with an empty result, or Release if the
// handler fails. It has no fencing context, heartbeat, observer, store-error
// policy or replay: a measurement of the receiver's unavoidable cost inside
// a router, with the router's scheduling and caches, not a receiver to use.
func FloorMiddleware(s stores.Store) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			ctx := msg.Context()
			k, err := recordKey(msg)
			if err != nil {
				return nil, err
			}
			c, err := s.Claim(ctx, k, consume.PayloadFingerprint(msg), receiver.DefaultLease)
			if err != nil {
				return nil, err
			}
			switch c.Status {
			case stores.Acquired:
			case stores.Completed:
				return nil, nil // a duplicate: its handler ran
			default:
				return nil, fmt.Errorf("%w: %q", errFloorHeld, k)
			}
			out, err := h(msg)
			if err != nil {
				return nil, errors.Join(err, s.Release(ctx, k, c.Token))
			}
			return out, s.Complete(ctx, k, c.Token, nil, recordTTL)
		}
	}
}

// FloorOn returns FloorMiddleware on a fresh store of backend b.
func FloorOn(env *Env, b Backend) Middleware {
	return onFreshStore(env, b, func(s stores.Store) (message.HandlerMiddleware, error) { return FloorMiddleware(s), nil })
}

// RedisFloorMiddleware does, per message, the least that guarding it with
// the Redis store must cost: derive the key as the receiver does,
// fingerprint the payload, and make one round trip of two native commands
// on the record's key, pipelined through go-redis: the claim the store
// sends (see [redisstore.ClaimCommand]) and a SET … XX PX that stands for
// the completion; then the handler. No fencing, replay, release or
// ordering: the CPU floor that the receiver on the Redis store is held
// against, not a receiver to use.
func RedisFloorMiddleware(c redis.UniversalClient, prefix string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			ctx := msg.Context()
			k, err := recordKey(msg)
			if err != nil {
				return nil, err
			}
			k = prefix + k
			claim := redisstore.ClaimCommand(k, stores.NewToken(), consume.PayloadFingerprint(msg), receiver.DefaultLease)
			args := make([]any, len(claim))
			for i, a := range claim {
				args[i] = a
			}
			pipe := c.Pipeline()
			pipe.Do(ctx, args...)
			pipe.Do(ctx, "set", k, claim[2], "xx", "px", recordTTL.Milliseconds())
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return nil, err
			}
			return h(msg)
		}
	}
}

// keyOf is the receiver's default key: the message's idempotency key
// metadata.
var keyOf = consume.KeyFromMetadata(consume.MetadataKey)

// recordKey is the key of msg's record as the receiver derives it: its
// handler's name and its idempotency key.
func recordKey(msg *message.Message) (string, error) {
	key, err := keyOf(msg)
	if err != nil {
		return "", err
	}
	return receiver.RecordKey(message.HandlerNameFromCtx(msg.Context()), key), nil
}
