package redisstream

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/transport/broker"
)

// connectTimeout bounds the PING with which [New] checks that
// Redis answers.
const connectTimeout = 10 * time.Second

// clientOptions parses cfg's URL (redis://, rediss:// or
// unix://) into the options of every client of the transport, with
// Username and Password where the URL has none and,
// for a rediss:// URL, TLS's roots. Commands honour their
// context's deadline. Its error, a [broker.URLError], leaves the URL out:
// it may hold a password.
func clientOptions(cfg Config) (*redis.Options, error) {
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		var uerr *url.Error // its message would repeat the URL, password included
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, &broker.URLError{What: "a Redis URL", Err: err}
	}
	opts.ContextTimeoutEnabled = true
	if opts.Username == "" {
		opts.Username = cfg.Username
	}
	if opts.Password == "" {
		opts.Password = cfg.Password
	}
	if opts.TLSConfig != nil && cfg.TLS != nil {
		tc := cfg.TLS.Clone()
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
// connectTimeout and ctx.
func redisFirstPing(ctx context.Context, c *redis.Client) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
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
