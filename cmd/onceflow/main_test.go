package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// The README's tour, run as a user would: serve on a free port as make run
// does (ALLOW_ANONYMOUS=true), publish three payments with one duplicate
// each, and read one charge per payment.
func TestTour(t *testing.T) {
	addr := testenv.ClosedAddr(t)
	environ := []string{"HTTP_ADDR=" + addr, "LOG_LEVEL=warn", "ALLOW_ANONYMOUS=true"}
	serve(t, environ, addr)
	if err := run(context.Background(), []string{"healthcheck"}, environ, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("healthcheck of a ready service: %v", err)
	}

	var out bytes.Buffer
	if err := run(context.Background(), []string{"publish", "--count", "3", "--duplicates", "1"}, environ, &out, &out); err != nil {
		t.Fatalf("publish: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "sent 6 messages: 3 payments") {
		t.Errorf("publish printed %q", out.String())
	}

	var got struct{ Payments, Charges, Notifications int }
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v1/ledger/summary")
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if got.Notifications == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.Payments != 3 || got.Charges != 3 || got.Notifications != 3 {
		t.Fatalf("summary after 6 sends of 3 payments = %+v, want 3 of each", got)
	}

	out.Reset()
	if err := run(context.Background(), []string{"load", "--count", "40", "--dup-ratio", "0.5", "--rate", "0"}, environ, &out, &out); err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	for _, want := range []string{": 20 unique payments, 20 duplicates, 0 errors", "every one of the 20 payments sent charged once"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("load printed %q, want %q in it", out.String(), want)
		}
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args, environ []string
		want          string
	}{
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate": use serve, load, provider, publish, keys, migrate, healthcheck`},
		{[]string{"healthcheck"}, []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)}, "/readyz: "},
		{[]string{"serve"}, []string{"STORE=mongo"}, `STORE="mongo" is not allowed`},
		{[]string{"serve"}, []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)}, "API_KEYS is unset: set it (key:client pairs) to require an API key, or set ALLOW_ANONYMOUS=true"},
		{[]string{"publish", "--count", "0"}, nil, "--count must be at least 1"},
		{[]string{"load", "--rate", "fast"}, nil, `invalid value "fast" for flag -rate`},
		{[]string{"load", "--dup-ratio", "1.5"}, nil, "--dup-ratio=1.5 is not allowed: use a fraction from 0 up to, not including, 1"},
		{[]string{"load", "--transport", "mqtt"}, nil, `--transport="mqtt" is not allowed: use one of gochannel, kafka, amqp, sql, nats, redisstream`},
		{[]string{"load", "--duration", "0s"}, nil, "--duration=0s is not allowed"},
		{[]string{"load", "--check"}, []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)}, "reading the ledger before sending"},
	} {
		err := run(context.Background(), tc.args, tc.environ, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%v) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
