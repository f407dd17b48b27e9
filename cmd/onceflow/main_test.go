package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The binary's tour, run as a user would: serve on a free port as make run
// does (ALLOW_ANONYMOUS=true), check it with healthcheck, then run the
// domain's command (the test domain's send: three requests, each posted
// twice) and read one charge, notice and receipt per request.
func TestTour(t *testing.T) {
	addr := testenv.ClosedAddr(t)
	environ := []string{"HTTP_ADDR=" + addr, "LOG_LEVEL=warn", "ALLOW_ANONYMOUS=true"}
	serve(t, environ, addr)
	if err := runTest(context.Background(), []string{"healthcheck"}, environ, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("healthcheck of a ready service: %v", err)
	}

	var out bytes.Buffer
	if err := runTest(context.Background(), []string{"send", "--count", "3", "--copies", "2"}, environ, &out, &out); err != nil {
		t.Fatalf("send: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "sent 6 requests: 3 ids") {
		t.Errorf("send printed %q", out.String())
	}

	once := testdomain.Counts{Rows: 3, IDs: 3}
	want := testdomain.Tally{Requests: testdomain.Counts{Rows: 6, IDs: 3}, Charges: once, Notices: once, Receipts: once}
	var got testdomain.Tally
	testenv.WaitFor(t, 10*time.Second, "three requests charged, noticed and receipted", func() bool {
		return testenv.GetJSON(t, "http://"+addr+"/v1/summary", &got) == http.StatusOK && got == want
	})
}

func TestRunRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args, environ []string
		want          string
	}{
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate": use serve, send, keys, poison, migrate, healthcheck`},
		{[]string{"healthcheck"}, []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)}, "/readyz: "},
		{[]string{"serve"}, []string{"STORE=mongo"}, `STORE="mongo" is not allowed`},
		{[]string{"serve"}, []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)}, "API_KEYS is unset: set it (key:client pairs) to require an API key, or set ALLOW_ANONYMOUS=true"},
		{[]string{"send", "--count", "0"}, nil, "--count and --copies must be at least 1"},
	} {
		err := runTest(context.Background(), tc.args, tc.environ, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%v) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
