package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Runner is a service with the New / Run(ctx) / Close life cycle.
type Runner interface {
	Run(ctx context.Context) error
	Close() error
}

// Run runs r until the test ends, or until the stop it returns is called:
// stop cancels Run's context, waits up to 30 s for Run to return, closes r
// and returns the first error of the two. The test's cleanup fails the
// test on that error.
func Run(t testing.TB, r Runner) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = fmt.Errorf("Run did not return 30s after cancel")
			}
			if err := r.Close(); err != nil && runErr == nil {
				runErr = err
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	return stop
}
