// Package redismeter counts what a go-redis client sends: a hook that the
// benchmarks and the tests of batching add to a client to see how many
// round trips an operation took and how long the client waited on them.
package redismeter

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Meter is a go-redis hook (client.AddHook) that counts round trips — one
// per command, one per pipeline however many commands it carries — and the
// time the client spent in them. It is safe for concurrent use.
type Meter struct{ n, ns atomic.Int64 }

// RoundTrips returns the round trips counted since the last Reset.
func (m *Meter) RoundTrips() int64 { return m.n.Load() }

// Mean returns the mean time of a round trip since the last Reset, zero
// when there was none.
func (m *Meter) Mean() time.Duration { return time.Duration(m.ns.Load() / max(1, m.n.Load())) }

// Reset starts the counts again from zero.
func (m *Meter) Reset() { m.n.Store(0); m.ns.Store(0) }

// DialHook implements redis.Hook.
func (m *Meter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (m *Meter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		defer m.count(time.Now())
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (m *Meter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		defer m.count(time.Now())
		return next(ctx, cmds)
	}
}

func (m *Meter) count(start time.Time) {
	m.ns.Add(int64(time.Since(start)))
	m.n.Add(1)
}
