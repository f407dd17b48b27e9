package flow

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// TestHTTPRoundsOrderPercentiles runs a small round of each variant: every
// response is 2xx (a round fails otherwise) and p50 <= p99.
func TestHTTPRoundsOrderPercentiles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := NewHTTPBench(ctx, HTTPOptions{Redis: testenv.Redis(t), Requests: 300, Clients: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, v := range []Variant{NoMiddleware, MemoryStore, RedisStore} {
		ps, err := b.RoundPercentiles(ctx, v, 50, 99)
		if err != nil {
			t.Fatal(err)
		}
		if ps[0] <= 0 || ps[0] > ps[1] {
			t.Errorf("%s: p50 %v µs, p99 %v µs: want 0 < p50 <= p99", v, ps[0], ps[1])
		}
		if _, err := b.Round(ctx, v, 50); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	if _, err := b.Round(ctx, Variant("other"), 50); err == nil {
		t.Error("an unknown variant was accepted")
	}
}

// TestHTTPVariantsReplayRepeatedKeys sends one request twice under the same
// key: behind the middleware the second answer is the first replayed;
// without it the handler answers again.
func TestHTTPVariantsReplayRepeatedKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := NewHTTPBench(ctx, HTTPOptions{Redis: testenv.Redis(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Variant{NoMiddleware, MemoryStore, RedisStore} {
		h, stop, err := b.handler(v)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		id := "p-" + shortID()
		var replays []bool
		for range 2 {
			status, replayed, err := postRequest(ctx, http.DefaultClient, srv.URL+createPath, id, id)
			if err != nil || status != http.StatusAccepted {
				t.Fatalf("%s: status %d, error %v; want 202", v, status, err)
			}
			replays = append(replays, replayed)
		}
		srv.Close()
		stop()
		want := v != NoMiddleware
		if replays[0] || replays[1] != want {
			t.Errorf("%s: replayed %v, want [false %v]", v, replays, want)
		}
	}
}
