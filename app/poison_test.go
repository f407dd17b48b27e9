package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
)

// operatorKey is alice's key of ADMIN_API_KEYS in these tests.
const operatorKey = "alice-key-0123456789abcdef"

// switchedOff makes the charge route fail permanently while it is set, as
// a bug would that a deploy then fixes; what is not JSON still reaches the
// handler, which finds it malformed.
func switchedOff(off *atomic.Bool) testdomain.Option {
	return testdomain.WithMiddleware(func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			if off.Load() && message.HandlerNameFromCtx(msg.Context()) == testdomain.ChargeRoute && json.Valid(msg.Payload) {
				return nil, fmt.Errorf("%w: the charge handler is switched off", testdomain.ErrRefused)
			}
			return h(msg)
		}
	})
}

// Poisoned messages are parked with their reason and class where the
// service keeps state — PostgreSQL, Redis or memory — listed and shown
// through the admin API; once the handler is fixed, a redrive runs each
// once (a second redrive is refused), a discarded one never runs, and a
// message with no topic of the service cannot be redriven.
func TestPoisonedMessagesAreParkedAndRedriven(t *testing.T) {
	for name, env := range storeEnvs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prefix, service := testenv.Names()
			if name == "redis" {
				testenv.DeleteRedisKeysOnCleanup(t, testenv.Redis(t), "{"+prefix) // the poison store's keys: see package poison/redis
			}
			testParkAndRedrive(t, append(env(t), "TOPIC_PREFIX="+prefix, "SERVICE_NAME="+service)...)
		})
	}
}

func testParkAndRedrive(t *testing.T, env ...string) {
	var off atomic.Bool
	off.Store(true)
	a := startDomain(t, testdomain.Domain(switchedOff(&off)), seams{}, testLogger(t), append(env, "ADMIN_API_KEYS="+operatorKey+":alice")...)
	c := &admin.Client{BaseURL: a.ops, APIKey: operatorKey}
	ctx := t.Context()

	for _, id := range []string{"p-1", "p-2", "p-3"} {
		flowtest.PostOK(t, a, id)
	}
	malformed := message.NewMessage(uuid.NewString(), []byte(`not json`))
	if err := a.transport.Publisher().Publish(testdomain.TopicRequested, malformed); err != nil {
		t.Fatal(err)
	}
	var parked []poison.Message
	waitFor(t, "four messages parked", func() bool {
		p, err := c.Poisoned(ctx, poison.Filter{Handler: testdomain.ChargeRoute})
		parked = p.Messages
		return err == nil && len(p.Messages) == 4
	})
	for i, m := range parked { // newest first: the malformed one, then the three refused
		want := poison.Permanent
		if i == 0 {
			want = poison.Malformed
		}
		if m.Class != want || m.Topic != testdomain.TopicRequested || m.State != poison.Parked || m.Reason == "" {
			t.Errorf("parked %+v, want class %s", m, want)
		}
	}
	if m, err := c.PoisonedMessage(ctx, parked[0].ID); err != nil || string(m.Payload) != "not json" {
		t.Fatalf("the newest parked message = %q, %v; want the malformed one", m.Payload, err)
	}
	summary, err := c.PoisonSummary(ctx)
	if err != nil || len(summary.Groups) != 2 || summary.Groups[1].Count != 3 || summary.Groups[1].Class != poison.Permanent {
		t.Fatalf("summary = %+v, %v; want 3 permanent and 1 malformed", summary, err)
	}
	if got := flowtest.Tally(t, a).Charges.Rows; got != 0 {
		t.Fatalf("%d charges while the handler is switched off", got)
	}

	off.Store(false) // the fix is deployed
	if _, err := c.Discard(ctx, parked[0].ID); err != nil {
		t.Fatal(err)
	}
	dry, err := c.RedriveAll(ctx, poison.Filter{Handler: testdomain.ChargeRoute}, false, true)
	if err != nil || dry.Done != 3 || !dry.DryRun {
		t.Fatalf("dry run = %+v, %v; want 3 to go", dry, err)
	}
	if got := flowtest.Tally(t, a).Charges.Rows; got != 0 {
		t.Fatalf("a dry run charged %d", got)
	}
	one, err := c.Redrive(ctx, parked[1].ID, false)
	if err != nil || one.State != poison.Redriven || one.SettledBy != "alice" {
		t.Fatalf("redrive = %+v, %v", one, err)
	}
	if _, err := c.Redrive(ctx, parked[1].ID, false); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("a second redrive = %v, want 409", err)
	}
	rest, err := c.RedriveAll(ctx, poison.Filter{Handler: testdomain.ChargeRoute}, false, false)
	if err != nil || rest.Done != 2 || rest.Refused != 0 {
		t.Fatalf("redrive all = %+v, %v; want the other 2", rest, err)
	}
	waitFor(t, "the three payments charged", func() bool { return flowtest.Tally(t, a).Charges.Rows == 3 })
	tally := flowtest.Tally(t, a)
	if tally.Charges.IDs != 3 {
		t.Errorf("charges = %+v, want 3 payments once each", tally.Charges)
	}
	if p, err := c.Poisoned(ctx, poison.Filter{}); err != nil || len(p.Messages) != 0 {
		t.Errorf("still parked: %+v, %v", p.Messages, err)
	}

	// A message published straight to the poison topic names a topic of
	// its choosing: it is parked, and never redriven.
	stray := message.NewMessage(uuid.NewString(), []byte(`{}`))
	stray.Metadata.Set(poison.TopicKey, "payments.elsewhere")
	if err := a.transport.Publisher().Publish(PoisonTopic, stray); err != nil {
		t.Fatal(err)
	}
	var strayID string
	waitFor(t, "the stray message parked", func() bool {
		p, err := c.Poisoned(ctx, poison.Filter{Topic: "payments.elsewhere"})
		if err != nil || len(p.Messages) != 1 {
			return false
		}
		strayID = p.Messages[0].ID
		return true
	})
	if _, err := c.Redrive(ctx, strayID, true); err == nil || !strings.Contains(err.Error(), "none the service consumes") {
		t.Errorf("redrive of a stray message = %v, want refused", err)
	}
	if n := a.Metric(t, "onceflow_poison_parked_total", "outcome", "parked"); n != 5 {
		t.Errorf("%v messages parked, want 5", n)
	}
}

// The poison console answers operators only.
func TestPoisonConsoleRefusesWithoutKey(t *testing.T) {
	a := startApp(t, "ADMIN_API_KEYS="+operatorKey+":alice")
	for _, key := range []string{"", "wrong-key-0123456789abcdef"} {
		c := &admin.Client{BaseURL: a.ops, APIKey: key}
		_, err := c.Poisoned(context.Background(), poison.Filter{})
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("key %q: %v, want 401", key, err)
		}
		if _, err := c.RedriveAll(context.Background(), poison.Filter{}, true, false); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("key %q: redrive all: %v, want 401", key, err)
		}
	}
	if _, err := (&admin.Client{BaseURL: a.ops, APIKey: operatorKey}).Poisoned(context.Background(), poison.Filter{}); err != nil {
		t.Errorf("with the key: %v", err)
	}
}
