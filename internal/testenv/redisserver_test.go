package testenv_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
)

// A server with an append-only file keeps its keys across a graceful
// shutdown and restart on the same port; one without persistence loses
// them. The fault suite's store outages rely on both.
func TestRedisProcessRestart(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		kept bool
	}{
		{"append-only file", []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}, true},
		{"no persistence", []string{"--appendonly", "no", "--save", ""}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testenv.RedisServer(t, c.args...)
			addr := p.Addr()
			if err := p.Client(t).Set(t.Context(), "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			p.Shutdown()
			if err := p.Client(t).Ping(t.Context()).Err(); err == nil {
				t.Fatal("PING answered after Shutdown")
			}
			if err := p.Restart(); err != nil {
				t.Fatal(err)
			}
			if p.Addr() != addr {
				t.Errorf("restarted on %s, want %s", p.Addr(), addr)
			}
			v, err := p.Client(t).Get(t.Context(), "k").Result()
			switch {
			case c.kept && v != "v":
				t.Errorf("after restart: GET k = %q, %v; want v", v, err)
			case !c.kept && !errors.Is(err, redis.Nil):
				t.Errorf("after restart: GET k = %q, %v; want no key", v, err)
			}
		})
	}
}
