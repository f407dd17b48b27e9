package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// The poison walk-through of docs/operations.md: a malformed message sent
// through Redis Streams is listed and shown, a redrive names what it
// would send and refuses to act on everything unasked, and a discard
// leaves it listed as discarded.
func TestPoisonCommand(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedAddr(t)
	const alice = "alices-admin-key-0123"
	environ := append(brokerenv.ServiceEnv(t, "redisstream", nil), "HTTP_ADDR="+addr, "LOG_LEVEL=warn", "ALLOW_ANONYMOUS=true")
	serve(t, append(environ, "ADMIN_API_KEYS="+alice+":alice"), addr)
	cfg, err := app.LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	p, err := app.OpenProducer(t.Context(), cfg, []string{testdomain.TopicRequested})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msg := message.NewMessage("malformed-1", []byte(`not json`))
	msg.Metadata.Set("idempotency_key", "order-77")
	if err := p.Publish(testdomain.TopicRequested, msg); err != nil {
		t.Fatal(err)
	}

	environ = append(environ, "OPERATOR_API_KEY="+alice)
	poison := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runTest(context.Background(), append([]string{"poison"}, args...), environ, &out, &out)
		return out.String(), err
	}
	var list string
	testenv.WaitFor(t, 20*time.Second, "the malformed message listed", func() bool {
		list, err = poison("list")
		return err == nil && strings.Contains(list, "order-77")
	})
	row := strings.Fields(strings.Split(list, "\n")[1])
	id := row[0]
	for _, want := range []string{"parked", "charge", "malformed", testdomain.TopicRequested, "order-77"} {
		if !strings.Contains(list, want) {
			t.Errorf("list has no %q:\n%s", want, list)
		}
	}
	if out, err := poison("show", "--id", id); err != nil || !strings.Contains(out, "payload (8 bytes):\nnot json") ||
		!strings.Contains(out, `"reason": "malformed event`) {
		t.Errorf("show: %v\n%s", err, out)
	}
	if out, err := poison("redrive", "--all", "--dry-run"); err != nil || !strings.Contains(out, `"done": 1`) || !strings.Contains(out, `"dry_run": true`) {
		t.Errorf("redrive --dry-run: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive"}, "name a message (--id), a filter"},
		{[]string{"redrive", "--id", id, "--dry-run"}, "--dry-run applies to a filter"},
		{[]string{"list", "--class", "bogus"}, `class "bogus" is not one of malformed`},
		{[]string{"list", "--since", "yesterday"}, "--since=yesterday is neither a time"},
		{[]string{"show", "--id", "999999"}, "404 Not Found: no parked message"},
		{[]string{"purge"}, `unknown poison action "purge"`},
	} {
		if out, err := poison(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("poison %q: %v (%s), want an error containing %q", tc.args, err, out, tc.want)
		}
	}
	if out, err := poison("discard", "--id", id); err != nil || !strings.Contains(out, `"state": "discarded"`) || !strings.Contains(out, `"settled_by": "alice"`) {
		t.Errorf("discard: %v\n%s", err, out)
	}
	if out, err := poison("list"); err != nil || strings.Contains(out, "order-77") {
		t.Errorf("list after the discard: %v\n%s", err, out)
	}
	if out, err := poison("list", "--state", "all"); err != nil || !strings.Contains(out, "discarded") {
		t.Errorf("list --state all: %v\n%s", err, out)
	}
}
