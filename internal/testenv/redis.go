package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisAddr is the Redis tests use unless TEST_REDIS_ADDR is set.
const DefaultRedisAddr = "127.0.0.1:6379"

// RedisAddr returns TEST_REDIS_ADDR or DefaultRedisAddr.
func RedisAddr() string { return Getenv("TEST_REDIS_ADDR", DefaultRedisAddr) }

// Redis returns a client of the single-node Redis, closed when t ends. Tests
// must scope their keys with KeyPrefix(t): the server is shared.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	Integration(t)
	addr := RedisAddr()
	c := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unreachable(t, "Redis", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// KeyPrefix returns a prefix unique to this test run, for keys in shared
// servers.
func KeyPrefix(t testing.TB) string {
	return "test:" + randomSuffix() + ":"
}
