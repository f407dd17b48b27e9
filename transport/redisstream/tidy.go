package redisstream

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill"
)

// deleteDeadConsumers deletes, every CheckConsumersInterval until ctx
// ends, the group's consumers that have no pending entry and were silent
// for ConsumerTimeout (see subscriptionConfig): the names of
// subscriptions gone, whose entries were released or claimed.
func (c *subscription) deleteDeadConsumers(ctx context.Context) {
	tick := time.NewTicker(c.conf.CheckConsumersInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		consumers, err := c.client.XInfoConsumers(ctx, c.stream, c.s.group).Result()
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Error("Could not list the consumers of the group", err, nil)
			}
			continue
		}
		for _, x := range consumers {
			if x.Name == c.name || x.Pending > 0 || x.Idle < c.conf.ConsumerTimeout {
				continue
			}
			if err := c.client.XGroupDelConsumer(ctx, c.stream, c.s.group, x.Name).Err(); err != nil && ctx.Err() == nil {
				c.logger.Error("Could not delete a dead consumer", err, watermill.LogFields{"dead_consumer": x.Name})
			}
		}
	}
}
