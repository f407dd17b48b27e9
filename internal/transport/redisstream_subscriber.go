package transport

import (
	"context"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/redis/go-redis/v9"
)

// Tuning of the Redis Streams subscribers; redisStreamSubscriberConfig
// explains the choices.
const (
	// redisStreamBlockTime is how long one XREADGROUP waits for a new
	// entry. An entry is delivered as soon as it arrives either way; this
	// only sets how often an idle subscriber asks again.
	redisStreamBlockTime = time.Second
	// redisStreamMaxClaimInterval caps the pause between two looks for
	// entries to claim.
	redisStreamMaxClaimInterval = 5 * time.Second
	// redisStreamCheckConsumersInterval is how often a subscriber looks
	// for consumers to delete.
	redisStreamCheckConsumersInterval = 5 * time.Minute
	// redisStreamConsumerTimeout is how long a consumer with no pending
	// entry must have been silent before it is deleted.
	redisStreamConsumerTimeout = 10 * time.Minute
	// redisStreamRegroupTimeout bounds the recreation of a vanished group.
	redisStreamRegroupTimeout = 5 * time.Second
)

// redisStreamPoolSize is the connection pool of a subscription of
// inFlight lanes: each lane's XREADGROUP blocks a connection for up to
// redisStreamBlockTime, each lane's XACK takes another, and two more serve
// the lanes' claims and their look for dead consumers.
func redisStreamPoolSize(inFlight int) int { return 2*inFlight + 2 }

// redisStreamSubscriberConfig is the subscriber of consumer, in group,
// reading stream through client:
//   - OldestId "0": a group created now reads the stream from its first
//     entry, so nothing published before the group existed is skipped.
//   - MaxIdleTime is [Config.AckDeadline]: an entry delivered to a consumer
//     and unacknowledged for that long is claimed by another. The service
//     sets it longer than its router may spend on one delivery, retries
//     included, so an entry still being handled is not taken over; only a
//     consumer that crashed leaves entries that old (one whose
//     subscription ended releases its own, see releasePending). Each
//     subscription also claims such entries once as it starts.
//   - ClaimInterval is a quarter of AckDeadline, at most
//     redisStreamMaxClaimInterval: an abandoned entry is delivered again
//     between AckDeadline and AckDeadline plus that after its delivery.
//     A look is one XPENDING with an IDLE filter, cheap for Redis. XCLAIM
//     is given the same minimum idle time, so two subscribers never both
//     claim one entry.
//   - NackResendSleep is [Config.ResendInterval]: the service continues its
//     router's retry backoff at its ceiling. Redis is not told of a nack;
//     the entry stays with its consumer, and its idle time keeps counting
//     towards AckDeadline.
//   - Dead consumers: every redisStreamCheckConsumersInterval a subscriber
//     deletes the consumers that have no pending entry and have not read
//     for redisStreamConsumerTimeout. A live consumer reads every
//     redisStreamBlockTime, and one with pending entries is never deleted
//     (that would drop its entries for good), so only the names of
//     processes gone, whose entries were claimed, are removed.
//   - Read errors (Redis down or restarting) are logged and retried every
//     half second, by the adapter. A group that vanished (Redis restarted
//     without persistence, or the stream was deleted) is created again
//     from "0"; the adapter alone would fail every read from then on.
//   - The first XREADGROUP waits redisStreamBlockTime too, not forever, so
//     a subscriber that is closing is not stuck in a read.
func redisStreamSubscriberConfig(cfg Config, client *redis.Client, stream, group, consumer string) redisstream.SubscriberConfig {
	claimInterval := min(max(cfg.AckDeadline/4, 10*time.Millisecond), redisStreamMaxClaimInterval)
	return redisstream.SubscriberConfig{
		Client:                        client,
		Unmarshaller:                  streamUnmarshaller{},
		Consumer:                      consumer,
		ConsumerGroup:                 group,
		NackResendSleep:               cfg.ResendInterval,
		BlockTime:                     redisStreamBlockTime,
		ClaimInterval:                 claimInterval,
		ClaimBatchSize:                redisstream.DefaultClaimBatchSize,
		MaxIdleTime:                   cfg.AckDeadline,
		CheckConsumersInterval:        redisStreamCheckConsumersInterval,
		ConsumerTimeout:               redisStreamConsumerTimeout,
		OldestId:                      "0",
		ShouldStopOnReadErrors:        regroup(client, stream, group),
		DisableIndefiniteInitialBlock: true,
	}
}

// regroup is a read error handler that never stops the subscriber, and
// creates group again, from the start of stream, when a read failed
// because it does not exist (NOGROUP).
func regroup(client *redis.Client, stream, group string) func(error) bool {
	return func(err error) bool {
		if !strings.HasPrefix(err.Error(), "NOGROUP") {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), redisStreamRegroupTimeout)
		defer cancel()
		_ = client.XGroupCreateMkStream(ctx, stream, group, "0").Err() // BUSYGROUP: another consumer did it
		return false
	}
}
