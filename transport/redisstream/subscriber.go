package redisstream

import (
	"time"
)

// Tuning of the Redis Streams subscriptions; subscriptionConfig
// explains the choices.
const (
	// blockTime is how long one XREADGROUP waits for a new
	// entry. An entry is delivered as soon as it arrives either way; this
	// sets how often an idle subscription asks again, and how long an
	// ending one waits for its last read where Redis refuses to cut it
	// short (see cutRead).
	blockTime = time.Second
	// maxClaimInterval caps the pause between two looks for
	// entries to claim.
	maxClaimInterval = 5 * time.Second
	// checkConsumersInterval is how often a subscription looks
	// for consumers to delete.
	checkConsumersInterval = 5 * time.Minute
	// consumerTimeout is how long a consumer with no pending
	// entry must have been silent before it is deleted.
	consumerTimeout = 10 * time.Minute
	// regroupTimeout bounds the creation of a group.
	regroupTimeout = 5 * time.Second
	// retryPause is the pause after a failed read or claim
	// (Redis down or restarting), before the next.
	retryPause = 500 * time.Millisecond
	// ackRetryPause is the pause after a failed XACK, before
	// it is sent again.
	ackRetryPause = 100 * time.Millisecond
	// poolSize is the connection pool of a subscription's
	// client beside its reader's (which has one): one for the XACKs, one
	// for the look for dead consumers and for cutting the reader's last
	// read short.
	poolSize = 2
)

// readConfig is how a subscription reads, claims and
// tidies its group; subscriptionConfig sets it.
type readConfig struct {
	BlockTime              time.Duration // of one XREADGROUP
	ClaimInterval          time.Duration // between two looks for abandoned entries
	MinIdle                time.Duration // of an entry before it is claimed
	ResendInterval         time.Duration // between a nack and the next hand-out
	CheckConsumersInterval time.Duration // between two looks for dead consumers
	ConsumerTimeout        time.Duration // of silence before a consumer without pending entries is deleted
}

// subscriptionConfig is how every subscription of cfg's
// transport reads its stream:
//   - New entries: XREADGROUP ">" with a COUNT of the free slots and a
//     BLOCK of blockTime, never forever, so that a
//     subscription that is ending is not stuck in a read.
//   - MinIdle is [broker.Redelivery.AckDeadline]: an entry delivered to a consumer
//     and unacknowledged for that long is claimed by another. The service
//     sets it longer than its router may spend on one delivery, retries
//     included, so an entry still being handled is not taken over; only a
//     consumer that crashed leaves entries that old (one whose
//     subscription ended releases its own, see releasePending). Each
//     subscription also claims such entries once as it starts.
//   - ClaimInterval is a quarter of AckDeadline, at most
//     maxClaimInterval: an abandoned entry is delivered again
//     between AckDeadline and AckDeadline plus that after its delivery,
//     once a slot of the claiming subscription is free. A look is one
//     XAUTOCLAIM of up to the free slots with MinIdle as its minimum idle
//     time, which Redis checks as it claims, so two subscriptions never
//     both claim one entry; a look that found a full batch goes on at
//     once from where it stopped. Reads wait for a look that is due.
//   - ResendInterval is [broker.Redelivery.ResendInterval]: the service continues its
//     router's retry backoff at its ceiling. Redis is not told of a nack;
//     the entry stays with its consumer, and its idle time keeps counting
//     towards AckDeadline.
//   - Dead consumers: every checkConsumersInterval a
//     subscription deletes the other consumers that have no pending entry
//     and have not read for consumerTimeout. A live consumer
//     reads every blockTime while it has a free slot, and one
//     with pending entries is never deleted (that would drop its entries
//     for good), so only the names of processes gone, whose entries were
//     claimed, are removed.
//   - Read errors (Redis down or restarting) are logged and retried every
//     retryPause. A group that vanished (Redis restarted
//     without persistence, or the stream was deleted) is created again
//     from "0".
func subscriptionConfig(cfg Config) readConfig {
	return readConfig{
		BlockTime:              blockTime,
		ClaimInterval:          min(max(cfg.AckDeadline/4, 10*time.Millisecond), maxClaimInterval),
		MinIdle:                cfg.AckDeadline,
		ResendInterval:         cfg.ResendInterval,
		CheckConsumersInterval: checkConsumersInterval,
		ConsumerTimeout:        consumerTimeout,
	}
}
