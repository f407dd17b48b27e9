package redisstream

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// cutPause is how often cutRead unblocks the reader until it
// has returned.
const cutPause = 10 * time.Millisecond

// readerOptions are the options of the reader's client: one connection,
// whose CLIENT ID is recorded in readerID each time it connects, for
// cutRead.
func (c *subscription) readerOptions() *redis.Options {
	opts := *c.s.t.opts
	opts.PoolSize = 1
	connected := opts.OnConnect
	opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if connected != nil {
			if err := connected(ctx, cn); err != nil {
				return err
			}
		}
		id, _ := cn.ClientID(ctx).Result() // 0 where refused: cutRead then waits
		c.readerID.Store(id)
		return nil
	}
	return &opts
}

// cutRead ends the reader's last read, once the subscription's context
// ended, as its block time would (CLIENT UNBLOCK), and returns when the
// reader has returned (read closed). A read that was not yet blocked is
// unblocked at the next try. Where Redis refuses CLIENT UNBLOCK (an ACL
// without it), the read ends after its block time, blockTime
// at most.
func (c *subscription) cutRead(read <-chan struct{}) {
	tick := time.NewTicker(cutPause)
	defer tick.Stop()
	for {
		if id := c.readerID.Load(); id != 0 {
			ctx, cancel := context.WithTimeout(context.Background(), blockTime)
			err := c.client.ClientUnblock(ctx, id).Err()
			cancel()
			if err != nil {
				<-read
				return
			}
		}
		select {
		case <-read:
			return
		case <-tick.C:
		}
	}
}
