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
		// A SCAN call looks at about count keys: a shared server may hold
		// millions (a bench's), and a round trip per hundred of them
		// took seconds per test.
		iter := c.Scan(ctx, 0, prefix+"*", 10000).Iterator()
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
