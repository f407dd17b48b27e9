package redisstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds of releasePending, and of the last acks (acker).
const (
	// releaseTimeout bounds the release of one subscription's
	// entries, and the retries of its last acks, so that Close returns
	// while Redis is down.
	releaseTimeout = 5 * time.Second
	// releaseBatch is how many entries one XPENDING lists at
	// least. A subscription holds at most three times its in-flight
	// count: the entries its handlers have, and as many acked ones in its
	// ack queue and in the XACK under way; releasePending lists that many
	// when it is more.
	releaseBatch = 100
)

// releasePending hands the entries that consumer read from stream and
// did not ack back to its group, by making them look abandoned: XCLAIM to
// itself with an idle time of [broker.Redelivery.AckDeadline]. Another consumer then
// claims them at its next look (see subscriptionConfig), a new
// one as it starts, instead of an ack deadline after they were read.
// Without this, a replica stopped for a rolling deployment would hold the
// entries its handlers had for the whole deadline.
//
// It runs once the consumer's subscription has stopped reading and
// handing out, and has sent the acks it had, through client, the
// subscription's. An entry whose handler finishes after that, or whose
// XACK failed, is delivered again, which the idempotent receiver absorbs.
// Releasing is best effort: when it fails (Redis is down) it logs why, and
// the entries are claimed after the deadline anyway.
func (s *subscriber) releasePending(client *redis.Client, stream, consumer string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := s.release(ctx, client, stream, consumer); err != nil {
		s.t.logger.Error("Could not release the entries of an ended subscription: they will be claimed after the ack deadline", err, nil)
	}
}

// release is releasePending within ctx.
func (s *subscriber) release(ctx context.Context, c *redis.Client, stream, consumer string) error {
	pending, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: s.group, Consumer: consumer, Start: "-", End: "+",
		Count: max(releaseBatch, 3*int64(s.inFlight)),
	}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil
	case err != nil:
		return fmt.Errorf("listing the entries %s holds in %s: %w", consumer, stream, err)
	case len(pending) == 0:
		return nil
	}
	args := []any{"XCLAIM", stream, s.group, consumer, 0}
	for _, p := range pending {
		args = append(args, p.ID)
	}
	args = append(args, "IDLE", s.t.cfg.AckDeadline.Milliseconds(), "JUSTID")
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("releasing the entries %s holds in %s: %w", consumer, stream, err)
	}
	return nil
}
