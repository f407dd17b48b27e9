package redisstream

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// subscription is one subscription of a subscriber: the
// consumer name of the group reading stream. Its reader (read) is the
// only goroutine that reads or claims entries, on a client of its own
// with one connection (see cutRead); each entry it gets is handed out by a
// goroutine of its own (deliver), and acks go to Redis through acks, on
// client.
type subscription struct {
	s      *subscriber
	conf   readConfig
	reader *redis.Client
	client *redis.Client
	stream string
	name   string
	logger watermill.LoggerAdapter
	out    chan *message.Message
	free   slots
	acks   *acker

	readerID atomic.Int64 // CLIENT ID of the reader's connection, 0 before it connects

	delivering sync.WaitGroup
	mu         sync.Mutex
	held       map[string]bool // IDs of the entries being handed out
}

func newSubscription(s *subscriber, stream string) *subscription {
	opts := *s.t.opts
	opts.PoolSize = poolSize
	client := redis.NewClient(&opts)
	name := consumerName()
	logger := s.t.logger.With(watermill.LogFields{"provider": "redis", "topic": stream, "consumer_group": s.group, "consumer": name})
	c := &subscription{
		s:      s,
		conf:   subscriptionConfig(s.t.cfg),
		client: client,
		stream: stream,
		name:   name,
		logger: logger,
		out:    make(chan *message.Message),
		free:   newSlots(s.inFlight),
		acks:   newAcker(client, stream, s.group, s.inFlight, logger),
		held:   map[string]bool{},
	}
	c.reader = redis.NewClient(c.readerOptions())
	return c
}

// createGroup creates the group, from the start of the stream, and the
// stream, when they do not exist.
func (c *subscription) createGroup(ctx context.Context) error {
	err := c.reader.XGroupCreateMkStream(ctx, c.stream, c.s.group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") { // BUSYGROUP: it exists
		return err
	}
	return nil
}

// run is the subscription until ctx ends, and its end: once the reader
// (its last read cut short, see cutRead) and every delivery have
// returned, it sends the acks that wait, hands back the entries still
// pending (releasePending), closes the clients, and then the channel.
func (c *subscription) run(ctx context.Context) {
	defer close(c.out)
	acksDone := c.acks.start(ctx)
	var tidying sync.WaitGroup
	tidying.Go(func() { c.deleteDeadConsumers(ctx) })
	read := make(chan struct{})
	go func() {
		defer close(read)
		c.read(ctx)
	}()
	<-ctx.Done()
	c.cutRead(read)
	c.delivering.Wait()
	c.acks.finish()
	<-acksDone
	tidying.Wait()
	c.s.releasePending(c.client, c.stream, c.name)
	c.s.closedClient(c.reader.Close())
	c.s.closedClient(c.client.Close())
}

// read takes new and abandoned entries into the free slots and starts a
// delivery for each, until ctx ends. It returns once its last read has
// returned, so that releasePending finds what that read took.
func (c *subscription) read(ctx context.Context) {
	claims := claimLook{due: time.Now()} // a first look as it starts
	for {
		n := c.free.take(ctx)
		if n == 0 {
			return
		}
		entries, err := c.next(ctx, n, &claims)
		c.free.give(n - len(entries))
		for _, e := range entries {
			if !c.hold(e.ID) { // claimed while this subscription hands it out
				c.free.give(1)
				continue
			}
			c.delivering.Go(func() { c.deliver(ctx, e) })
		}
		if err != nil && !c.failed(ctx, err) {
			return
		}
	}
}

// claimLook is where the looks for abandoned entries are: the
// time of the next, and the ID it starts from.
type claimLook struct {
	due   time.Time
	start string // "" for the start of the pending entries
}

// next returns up to n entries: those a due look for abandoned entries
// claims, or else the new entries that arrive within the block time or
// before the next look.
func (c *subscription) next(ctx context.Context, n int, claims *claimLook) ([]redis.XMessage, error) {
	if wait := time.Until(claims.due); wait > 0 {
		return c.readNew(ctx, n, max(min(c.conf.BlockTime, wait), time.Millisecond)) // BLOCK 0 would wait for ever
	}
	return c.claim(ctx, n, claims)
}

// readNew reads up to n new entries, waiting up to block for the first.
func (c *subscription) readNew(ctx context.Context, n int, block time.Duration) ([]redis.XMessage, error) {
	streams, err := c.reader.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.s.group, Consumer: c.name, Streams: []string{c.stream, ">"}, Count: int64(n), Block: block,
	}).Result()
	switch {
	case err == redis.Nil: // nothing within block
		return nil, nil
	case err != nil:
		return nil, err
	case len(streams) == 0:
		return nil, nil
	}
	return streams[0].Messages, nil
}

// claim takes over up to n entries of the group idle for MinIdle, from
// where the last look stopped, and sets when the next look is due: at
// once if this one stopped before the end of the pending entries, else
// after the claim interval.
func (c *subscription) claim(ctx context.Context, n int, claims *claimLook) ([]redis.XMessage, error) {
	start := claims.start
	if start == "" {
		start = "0-0"
	}
	entries, next, err := c.reader.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: c.stream, Group: c.s.group, Consumer: c.name, MinIdle: c.conf.MinIdle, Start: start, Count: int64(n),
	}).Result()
	switch {
	case err != nil:
		claims.start, claims.due = "", time.Now().Add(c.conf.ClaimInterval)
		return nil, err
	case next == "0-0":
		claims.start, claims.due = "", time.Now().Add(c.conf.ClaimInterval)
	default:
		claims.start = next
	}
	return entries, nil
}

// failed handles an error of a read or claim: unless ctx ended, it logs
// it, creates the group again when it vanished (NOGROUP), and pauses for
// retryPause. It reports whether to go on.
func (c *subscription) failed(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	c.logger.Error("Could not read the stream", err, nil)
	if strings.HasPrefix(err.Error(), "NOGROUP") {
		gctx, cancel := context.WithTimeout(ctx, regroupTimeout)
		defer cancel()
		if err := c.createGroup(gctx); err != nil && ctx.Err() == nil {
			c.logger.Error("Could not create the consumer group again", err, nil)
		}
	}
	return pause(ctx, retryPause)
}

// hold records that the subscription hands out entry id, and reports
// false if it already does.
func (c *subscription) hold(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[id] {
		return false
	}
	c.held[id] = true
	return true
}

// drop forgets that the subscription hands out entry id.
func (c *subscription) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, id)
}

// pause waits d, and reports false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
