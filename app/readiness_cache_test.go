package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// However many probes come, /readyz asks the store and the broker once per
// readinessTTL: probes within it, one after the other or all at once, get
// the verdict of one round of checks.
func TestReadinessChecksOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var storeCalls, brokerCalls atomic.Int32
		store := func(context.Context) error { storeCalls.Add(1); return nil }
		broker := func(context.Context) error {
			brokerCalls.Add(1)
			time.Sleep(100 * time.Millisecond) // a round trip, while more probes arrive
			return nil
		}
		r := newReadiness(func() bool { return true }, store, broker, slog.New(slog.DiscardHandler))

		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if ready, checks := r.verdict(t.Context()); !ready {
					t.Errorf("not ready: %v", checks)
				}
			})
		}
		wg.Wait()
		time.Sleep(readinessTTL / 2)
		r.verdict(t.Context())
		if s, b := storeCalls.Load(), brokerCalls.Load(); s != 1 || b != 1 {
			t.Errorf("51 probes within %v asked the store %d and the broker %d times, want once each", readinessTTL, s, b)
		}
		time.Sleep(readinessTTL)
		r.verdict(t.Context())
		if s, b := storeCalls.Load(), brokerCalls.Load(); s != 2 || b != 2 {
			t.Errorf("a probe after %v asked the store %d and the broker %d times in all, want twice each", readinessTTL, s, b)
		}
	})
}

// A failing check is logged when it starts failing and when it answers
// again, not at every probe in between; /readyz says not ready meanwhile.
// The router's state is not logged: it is not running before Run.
func TestReadinessLogsTransitionsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		broker := func(context.Context) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		}
		var running atomic.Bool
		var logs testenv.Buffer
		r := newReadiness(running.Load, func(context.Context) error { return nil }, broker, slog.New(slog.NewTextHandler(&logs, nil)))
		probe := func(rounds int) (ready bool, checks map[string]string) {
			for range rounds {
				ready, checks = r.verdict(t.Context())
				time.Sleep(readinessTTL)
			}
			return ready, checks
		}

		if ready, checks := probe(3); ready || checks["router"] != "not running" {
			t.Errorf("before the router runs: ready %v, %v; want the router not running", ready, checks)
		}
		running.Store(true)
		if ready, _ := probe(3); !ready {
			t.Error("not ready with every check passing")
		}
		down.Store(true)
		if ready, checks := probe(5); ready || checks["broker"] != "unreachable" {
			t.Errorf("during the outage: ready %v, %v; want the broker unreachable", ready, checks)
		}
		down.Store(false)
		probe(5)
		down.Store(true)
		probe(2)

		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		want := []string{
			"readiness: broker unreachable", "connection refused",
			"readiness: broker answers again",
			"readiness: broker unreachable",
		}
		if len(lines) != 3 || !strings.Contains(lines[0], want[0]) || !strings.Contains(lines[0], want[1]) ||
			!strings.Contains(lines[1], want[2]) || !strings.Contains(lines[2], want[3]) {
			t.Errorf("logged:\n%s\nwant three lines: the outage, the recovery, the second outage", logs.String())
		}
	})
}
