package testenv

import (
	"testing"

	"github.com/redis/go-redis/v9"

	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// RedisStore is the Redis record store on c with cfg, failing t when
// redisstore.New refuses cfg.
func RedisStore(t testing.TB, c redis.UniversalClient, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
