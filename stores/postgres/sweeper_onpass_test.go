package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores/postgres"
)

// pass is one report to SweeperConfig.OnPass.
type pass struct {
	deleted int64
	err     error
}

// Run tells OnPass about each pass: what it deleted, and its error once the
// database is gone.
func TestSweeperReportsPasses(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	seed(t, pool, "expired", "completed", 7, -time.Minute)
	passes := make(chan pass, 16)
	w := postgres.NewSweeper(s, postgres.SweeperConfig{
		Interval: 20 * time.Millisecond,
		OnPass: func(n int64, took time.Duration, err error) {
			if took <= 0 {
				t.Errorf("pass took %v", took)
			}
			passes <- pass{n, err}
		},
	})
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	next := func() pass {
		t.Helper()
		select {
		case p := <-passes:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("no pass reported within 10s")
			return pass{}
		}
	}
	if p := next(); p.deleted != 7 || p.err != nil {
		t.Fatalf("first pass reported %+v, want 7 deleted", p)
	}
	if p := next(); p.deleted != 0 || p.err != nil {
		t.Fatalf("second pass reported %+v, want nothing left to delete", p)
	}
	pool.Close()
	for {
		if p := next(); p.err != nil {
			break // a pass on the closed pool fails, and is reported
		}
	}
}
