package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"
)

// serve runs `onceflow serve` with environ, whose HTTP_ADDR is addr, until
// the returned stop is called, and returns once it is ready. stop ends it
// and returns what serve returned.
func serve(t *testing.T, environ []string, addr string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- run(ctx, []string{"serve"}, environ, &bytes.Buffer{}, &bytes.Buffer{}) }()
	waitReady(t, "http://"+addr+"/readyz")
	return func() error {
		cancel()
		return <-served
	}
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 10s", url)
}
