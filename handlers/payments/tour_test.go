package payments_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport"
)

// command runs the payments domain's command args[0] with the rest of args,
// as `onceflow <args>` runs it, on environ.
func command(t *testing.T, args, environ []string, stdout, stderr *bytes.Buffer) error {
	t.Helper()
	c, ok := payments.Domain().Commands[args[0]]
	if !ok {
		t.Fatalf("the payments domain has no command %s", args[0])
	}
	return c.Run(context.Background(), app.CommandEnv(args[1:], environ, stdout, stderr))
}

// The example's tour (handlers/README.md), run as a user would: the
// service as make run starts it (ALLOW_ANONYMOUS=true), publish three
// payments with one duplicate each, and read one charge per payment; then
// a load with its ledger check.
func TestTour(t *testing.T) {
	s := apptest.Start(t, payments.Domain(), "ALLOW_ANONYMOUS=true")
	environ := []string{"HTTP_ADDR=" + s.Addr(), "LOG_LEVEL=warn", "ALLOW_ANONYMOUS=true"}
	if err := app.Healthcheck(context.Background(), environ); err != nil {
		t.Errorf("healthcheck of a ready service: %v", err)
	}

	var out bytes.Buffer
	if err := command(t, []string{"publish", "--count", "3", "--duplicates", "1"}, environ, &out, &out); err != nil {
		t.Fatalf("publish: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "sent 6 messages: 3 payments") {
		t.Errorf("publish printed %q", out.String())
	}

	var got struct{ Payments, Charges, Notifications int }
	testenv.WaitFor(t, 10*time.Second, "three payments notified", func() bool {
		return s.Get(t, "/v1/ledger/summary", &got) == http.StatusOK && got.Notifications == 3
	})
	if got.Payments != 3 || got.Charges != 3 || got.Notifications != 3 {
		t.Fatalf("summary after 6 sends of 3 payments = %+v, want 3 of each", got)
	}

	out.Reset()
	if err := command(t, []string{"load", "--count", "40", "--dup-ratio", "0.5", "--rate", "0"}, environ, &out, &out); err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	for _, want := range []string{": 20 unique payments, 20 duplicates, 0 errors", "every one of the 20 payments sent charged once"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("load printed %q, want %q in it", out.String(), want)
		}
	}
}

// The domain's commands refuse bad flags, each with one line naming it.
func TestCommandsRejectBadInput(t *testing.T) {
	for _, tc := range []struct {
		args, environ []string
		want          string
	}{
		{[]string{"publish", "--count", "0"}, nil, "--count must be at least 1"},
		{[]string{"load", "--rate", "fast"}, nil, `invalid value "fast" for flag -rate`},
		{[]string{"load", "--dup-ratio", "1.5"}, nil, "--dup-ratio=1.5 is not allowed: use a fraction from 0 up to, not including, 1"},
		{[]string{"load", "--transport", "mqtt"}, nil, `--transport="mqtt" is not allowed: use one of ` + strings.Join(transport.Kinds, ", ")},
		{[]string{"load", "--duration", "0s"}, nil, "--duration=0s is not allowed"},
		{[]string{"load", "--check"}, []string{"HTTP_ADDR=" + testenv.ClosedAddr(t)}, "reading the ledger before sending"},
	} {
		err := command(t, tc.args, tc.environ, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
