package redismeter_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/redismeter"
)

// A command is one round trip and so is a pipeline, however many commands
// it carries.
func TestMeterCountsRoundTrips(t *testing.T) {
	c := testenv.Redis(t)
	m := &redismeter.Meter{}
	c.AddHook(m)
	ctx, key := t.Context(), testenv.KeyPrefix(t)+"k"
	setAndPipeline(t, ctx, c, key) // opening connections sends commands of their own
	m.Reset()
	setAndPipeline(t, ctx, c, key)
	if got := m.RoundTrips(); got != 2 {
		t.Fatalf("a command and a pipeline of 10 counted %d round trips, want 2", got)
	}
	if m.Mean() <= 0 {
		t.Fatalf("mean round trip %v, want above zero", m.Mean())
	}
	m.Reset()
	if m.RoundTrips() != 0 || m.Mean() != 0 {
		t.Fatalf("after Reset: %d round trips, mean %v", m.RoundTrips(), m.Mean())
	}
}

func setAndPipeline(t *testing.T, ctx context.Context, c *redis.Client, key string) {
	t.Helper()
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	for range 10 {
		pipe.Get(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}
