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

// The key walk-through of docs/operations.md, on the test domain: find a
// charge's key, refuse the wrong verb, evict it, and see it gone; every
// refusal names its reason. The operator sends their own key of the
// service's ADMIN_API_KEYS.
func TestKeys(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedAddr(t)
	const alice = "alices-admin-key-0123"
	serve(t, []string{"HTTP_ADDR=" + addr, "LOG_LEVEL=warn", "ALLOW_ANONYMOUS=true",
		"ADMIN_API_KEYS=" + alice + ":alice,bobs-admin-key-456789:bob"}, addr)
	environ := []string{"HTTP_ADDR=" + addr, "LOG_LEVEL=warn", "OPERATOR_API_KEY=" + alice}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/charges", strings.NewReader(`{"id":"req-cli-1","amount":100}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	keys := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := runTest(context.Background(), append([]string{"keys"}, args...), environ, &out, &errs)
		return out.String(), err
	}
	var rec struct{ Handler, Key, State string }
	deadline := time.Now().Add(10 * time.Second)
	for rec.State != "completed" {
		out, err := keys("get", "--handler", "charge", "--key", "req-cli-1")
		if err == nil {
			_ = json.Unmarshal([]byte(out), &rec)
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys get: %q, %v", out, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err := keys("get", "--handler", "http", "--key", "order-1"); err != nil || !strings.Contains(out, `"route": "POST /v1/charges"`) {
		t.Fatalf("keys get of the Idempotency-Key: %q, %v", out, err)
	}
	if out, err := keys("evict", "--handler", "charge", "--key", "req-cli-1"); err != nil || !strings.Contains(out, `"state": "completed"`) {
		t.Fatalf("keys evict: %q, %v", out, err)
	}
	for _, tc := range []struct {
		args    []string
		environ []string
		want    string
	}{
		{[]string{"get", "--handler", "charge", "--key", "req-cli-1"}, nil, "404 Not Found: no live record"},
		{[]string{"release", "--handler", "http", "--key", "order-1"}, nil, "409 Conflict: the key is completed"},
		{[]string{"evict", "--handler", "charges", "--key", "k"}, nil, `400 Bad Request: unknown handler "charges"`},
		{[]string{"evict", "--handler", "charge"}, nil, "400 Bad Request: the key is empty"},
		{[]string{"evict", "--handler", "http", "--key", "order-1", "--client", "someone"}, nil, `unknown client "someone"`},
		{[]string{"purge", "--handler", "charge", "--key", "k"}, nil, `unknown keys action "purge"`},
		{[]string{"get", "--handler", "charge", "--key", "k", "--actor", "alice"}, nil, "flag provided but not defined: -actor"},
		{[]string{"get", "--handler", "charge", "--key", "k"}, []string{"OPERATOR_API_KEY="}, "OPERATOR_API_KEY is required"},
		// Without OPERATOR_API_KEY it sends ADMIN_API_KEY: accepted, past authentication.
		{[]string{"get", "--handler", "charge", "--key", "req-cli-1"}, []string{"OPERATOR_API_KEY=", "ADMIN_API_KEY=" + alice}, "404 Not Found: no live record"},
		{[]string{"get", "--handler", "charge", "--key", "k"}, []string{"OPERATOR_API_KEY=wrong-admin-key-0123"}, "401 Unauthorized: the API key is not valid"},
	} {
		var out bytes.Buffer
		err := runTest(context.Background(), append([]string{"keys"}, tc.args...), append(environ, tc.environ...), &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("keys %q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
