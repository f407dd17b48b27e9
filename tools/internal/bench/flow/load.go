package flow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

// Latencies are recorded in microseconds from 1 µs to a minute, to three
// significant digits.
const (
	maxLatency      = int64(time.Minute / time.Microsecond)
	latencyDigits   = 3
	warmupPerClient = 5
	requestTimeout  = 30 * time.Second
)

// load serves h on a loopback listener and sends it warm-up requests, then
// n measured ones, from clients workers, each a request of its own with a
// fresh Idempotency-Key under round. It returns the measured latencies,
// and fails on the first response that is not 2xx.
func load(ctx context.Context, h http.Handler, n, clients int, round string) (*hdrhistogram.Histogram, error) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: requestTimeout}
	url := srv.URL + createPath

	var next atomic.Int64
	send := func(ctx context.Context) (time.Duration, error) {
		i := next.Add(1)
		id := round + "-" + strconv.FormatInt(i, 10)
		start := time.Now()
		status, _, err := postRequest(ctx, client, url, id, id)
		elapsed := time.Since(start)
		if err == nil && (status < 200 || status > 299) {
			err = fmt.Errorf("request %s answered %d", id, status)
		}
		return elapsed, err
	}
	total := hdrhistogram.New(1, maxLatency, latencyDigits)
	var mu sync.Mutex
	var measured atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range clients {
		g.Go(func() error {
			for range warmupPerClient {
				if _, err := send(gctx); err != nil {
					return err
				}
			}
			own := hdrhistogram.New(1, maxLatency, latencyDigits)
			for measured.Add(1) <= int64(n) {
				d, err := send(gctx)
				if err != nil {
					return err
				}
				_ = own.RecordValue(max(1, d.Microseconds())) // values over a minute failed the timeout
			}
			mu.Lock()
			defer mu.Unlock()
			total.Merge(own)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return total, context.Cause(ctx)
}

// createPath is the path of testdomain.CreatePattern.
var createPath = strings.TrimPrefix(testdomain.CreatePattern, http.MethodPost+" ")

// postRequest posts request id to url, the API's createPath, with
// Idempotency-Key key, and returns the status, whether the response was
// replayed, and an error if the exchange failed.
func postRequest(ctx context.Context, client *http.Client, url, id, key string) (int, bool, error) {
	body := fmt.Appendf(nil, `{"id":%q,"amount":1000}`, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idempotencykey.Header, key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	err = errors.Join(err, resp.Body.Close())
	return resp.StatusCode, resp.Header.Get(idempotencykey.ReplayedHeader) == "true", err
}
