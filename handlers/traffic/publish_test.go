package traffic_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/traffic"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The duplicate demo against a broker: publish goes straight to the broker,
// as another producer would, and the service charges each payment once.
func TestPublishToBroker(t *testing.T) {
	env := []string{"TRANSPORT=sql", "STORE=postgres", "DATABASE_URL=" + testenv.PostgresSchema(t)}
	a := startApp(t, env...)

	var out bytes.Buffer
	err := traffic.Publish(context.Background(), cmdEnv(env), traffic.PublishOptions{Count: 4, Duplicates: 2}, &out)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if !strings.Contains(out.String(), "sent 12 messages: 4 payments") {
		t.Errorf("Publish printed %q", out.String())
	}
	waitFor(t, "every copy handled", func() bool {
		return a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "duplicate") == 8 &&
			a.summary(t).Notifications == 4
	})
	if got := a.summary(t); got != (summary{4, 4, 4}) {
		t.Errorf("summary = %+v, want 4 payments, charges and notifications", got)
	}

	err = traffic.Publish(context.Background(), cmdEnv([]string{"HTTP_ADDR=127.0.0.1:1"}), traffic.PublishOptions{Count: 1, Topic: "x"}, &out)
	if err == nil || !strings.Contains(err.Error(), "--topic needs a broker transport") {
		t.Errorf("--topic with the in-process transport: %v", err)
	}
}

// Against a service with API_KEYS, publish authenticates with
// PUBLISH_API_KEY; without it every copy is refused.
func TestPublishThroughHTTPWithAPIKey(t *testing.T) {
	a := startApp(t, "API_KEYS=s3cret-key-0123456789:demo")
	env := []string{"HTTP_ADDR=" + a.Addr()}

	var out bytes.Buffer
	err := traffic.Publish(context.Background(), cmdEnv(env), traffic.PublishOptions{Count: 1}, &out)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Publish without PUBLISH_API_KEY: %v, want 401", err)
	}
	if err := traffic.Publish(context.Background(), cmdEnv(append(env, "PUBLISH_API_KEY=s3cret-key-0123456789")),
		traffic.PublishOptions{Count: 2, Duplicates: 1}, &out); err != nil {
		t.Fatalf("Publish with PUBLISH_API_KEY: %v", err)
	}
	waitFor(t, "both payments notified", func() bool {
		return a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.NotifyCustomerHandler, "outcome", "processed") == 2
	})
	if n := a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "processed"); n != 2 {
		t.Errorf("charged %v times for 2 payments", n)
	}
}
