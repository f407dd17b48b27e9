package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// runTest runs the binary's command args on environ, as main does, with
// the template's test domain in place of service()'s.
func runTest(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	return run(ctx, testdomain.Domain(), args, environ, stdout, stderr)
}

// serve runs `onceflow serve` with environ, whose HTTP_ADDR is addr, and
// returns once it is ready; it fails the test at once if serve returns
// first. It runs until the test ends, which fails if serve returned an
// error, or until stop, which ends it sooner and returns what serve
// returned.
func serve(t *testing.T, environ []string, addr string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var served error
	go func() {
		defer close(done)
		served = runTest(ctx, []string{"serve"}, environ, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	stop = sync.OnceValue(func() error {
		cancel()
		<-done
		return served
	})
	failed := false
	t.Cleanup(func() {
		if err := stop(); err != nil && !failed {
			t.Errorf("serve: %v", err)
		}
	})
	url := "http://" + addr + "/readyz"
	testenv.WaitFor(t, 10*time.Second, url+" to answer 200", func() bool {
		select {
		case <-done:
			failed = true
			t.Fatalf("serve returned before %s answered 200: %v", url, served)
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return stop
}
