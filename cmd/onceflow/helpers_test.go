package main

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// serve runs `onceflow serve` with environ, whose HTTP_ADDR is addr, and
// returns once it is ready. It runs until the test ends, which fails if
// serve returned an error, or until stop, which ends it sooner and returns
// what serve returned.
func serve(t *testing.T, environ []string, addr string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- run(ctx, []string{"serve"}, environ, &bytes.Buffer{}, &bytes.Buffer{}) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-served
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	url := "http://" + addr + "/readyz"
	testenv.WaitFor(t, 10*time.Second, url+" to answer 200", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return stop
}
