package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DeleteRedisKeysOnCleanup deletes, when t ends, every key of c's database
// that starts with prefix (a glob pattern without its "*"): the streams a
// test created on a shared Redis.
func DeleteRedisKeysOnCleanup(t testing.TB, c *redis.Client, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("deleting %s: %v", iter.Val(), err)
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("listing keys %s*: %v", prefix, err)
		}
	})
}
