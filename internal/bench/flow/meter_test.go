package flow

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandMeter is a go-redis hook counting the commands a client sends and
// their total latency as the client sees it.
type commandMeter struct{ n, ns atomic.Int64 }

func (m *commandMeter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *commandMeter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		m.n.Add(1)
		m.ns.Add(int64(time.Since(start)))
		return err
	}
}

func (m *commandMeter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		m.n.Add(1) // one round trip
		m.ns.Add(int64(time.Since(start)))
		return err
	}
}

// reset zeroes the counts.
func (m *commandMeter) reset() { m.n.Store(0); m.ns.Store(0) }

// mean is the mean latency of a command since the last reset.
func (m *commandMeter) mean() time.Duration {
	return time.Duration(m.ns.Load() / max(1, m.n.Load()))
}
