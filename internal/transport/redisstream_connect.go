package transport

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStreamConnectTimeout bounds the PING with which [New] checks that
// Redis answers.
const redisStreamConnectTimeout = 10 * time.Second

// redisStreamOptions parses cfg's RedisStreamURL (redis://, rediss:// or
// unix://) into the options of every client of the transport, with
// RedisStreamUsername and RedisStreamPassword where the URL has none and,
// for a rediss:// URL, RedisStreamTLS's roots. Commands honour their
// context's deadline. Its error leaves the URL out: it may hold a
// password.
func redisStreamOptions(cfg Config) (*redis.Options, error) {
	opts, err := redis.ParseURL(cfg.RedisStreamURL)
	if err != nil {
		var uerr *url.Error // its message would repeat the URL, password included
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("not a Redis URL: %w", err)
	}
	opts.ContextTimeoutEnabled = true
	if opts.Username == "" {
		opts.Username = cfg.RedisStreamUsername
	}
	if opts.Password == "" {
		opts.Password = cfg.RedisStreamPassword
	}
	if opts.TLSConfig != nil && cfg.RedisStreamTLS != nil {
		tc := cfg.RedisStreamTLS.Clone()
		if tc.ServerName == "" {
			tc.ServerName = opts.TLSConfig.ServerName
		}
		opts.TLSConfig = tc
	}
	return opts, nil
}

// redisProbeOptions are opts for the client of the readiness checks: two
// connections, and no retries, so that a check says whether Redis answers
// now.
func redisProbeOptions(opts *redis.Options) *redis.Options {
	probe := *opts
	probe.PoolSize = 2
	probe.MaxRetries = -1
	return &probe
}

// redisFirstPing checks that Redis answers a PING within
// redisStreamConnectTimeout and ctx.
func redisFirstPing(ctx context.Context, c *redis.Client) error {
	ctx, cancel := context.WithTimeout(ctx, redisStreamConnectTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("no answer from Redis: %w", err)
	}
	return nil
}

// redisAnswers is ready when Redis answers a PING within ctx, on the
// transport's readiness client.
func redisAnswers(c *redis.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("pinging Redis: %w", err)
		}
		return nil
	}
}
