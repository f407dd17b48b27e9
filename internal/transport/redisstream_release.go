package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds of releasePending.
const (
	// redisStreamReleaseTimeout bounds the release of one subscription's
	// entries, so that Close returns while Redis is down.
	redisStreamReleaseTimeout = 5 * time.Second
	// redisStreamReleaseBatch is how many entries one XPENDING lists. A
	// lane holds at most three: the one its handler has, and two read
	// ahead; releasePending lists more when the lanes may hold more.
	redisStreamReleaseBatch = 100
)

// releasePending hands the entries that consumer read from stream and
// did not ack back to its group, by making them look abandoned: XCLAIM to
// itself with an idle time of [Config.AckDeadline]. Another consumer then
// claims them at its next look (see redisStreamSubscriberConfig), a new
// one as it starts, instead of an ack deadline after they were read.
// watermill-redisstream reads up to two entries ahead of its handler in
// each lane; without this, a replica stopped for a rolling deployment
// would hold those back for the whole deadline, and the entries its
// handler still held too.
//
// It runs once the consumer's subscription has ended (subscribeLanes):
// the router using it has stopped, so no handler is still working on an
// entry; one whose handler finished but whose XACK was cut short by the
// end is delivered again, which the idempotent receiver absorbs.
// Releasing is best effort: when it fails (Redis is down) it logs why,
// and the entries are claimed after the deadline anyway.
func (s *redisStreamSubscriber) releasePending(stream, consumer string) {
	ctx, cancel := context.WithTimeout(context.Background(), redisStreamReleaseTimeout)
	defer cancel()
	if err := s.release(ctx, stream, consumer); err != nil {
		s.t.logger.Error("Could not release the entries of an ended subscription: they will be claimed after the ack deadline", err, nil)
	}
}

// release is releasePending within ctx.
func (s *redisStreamSubscriber) release(ctx context.Context, stream, consumer string) error {
	c := s.t.probe
	pending, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: s.group, Consumer: consumer, Start: "-", End: "+",
		Count: max(redisStreamReleaseBatch, 3*int64(s.inFlight)),
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
