package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// TestOutboxDeliversAfterBrokerOutage cuts the service's publishing
// connection to RabbitMQ, the one the outbox relay uses, while payments keep
// arriving. In transaction mode the API still
// accepts them (each payment and its PaymentRequested commit to PostgreSQL,
// the event to the outbox); once the broker is back, the relay delivers
// every accumulated event, and each payment is charged and notified once.
func TestOutboxDeliversAfterBrokerOutage(t *testing.T) {
	env, url, _ := amqpAppEnv(t)
	proxy := startSwitchProxy(t, amqpHostPort(t, url))
	env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.Addr(), 1),
		"STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	a := startApp(t, env...)

	if code := a.post(t, "/v1/payments", paymentBody("before-outage")); code != http.StatusAccepted {
		t.Fatalf("POST before the outage: status %d", code)
	}
	waitFor(t, "the first payment notified", func() bool { return a.summary(t).Notifications == 1 })

	proxy.cutFirst()
	const during = 20
	for i := range during {
		if code := a.post(t, "/v1/payments", paymentBody(fmt.Sprintf("during-outage-%d", i))); code != http.StatusAccepted {
			t.Fatalf("POST %d during the outage: status %d, want 202 (the event waits in the outbox)", i, code)
		}
	}
	if s := a.summary(t); s.Charges != 1 {
		t.Fatalf("during the outage: %+v, want still 1 charge", s)
	}

	proxy.restore()
	waitForWithin(t, 60*time.Second, "every payment notified after the outage", func() bool {
		return a.summary(t).Notifications == during+1
	})
	if s := a.summary(t); s.Charges != during+1 {
		t.Errorf("after the outage: %d charges, want exactly %d", s.Charges, during+1)
	}
	t.Logf("after the outage: %d payments relayed from the outbox, %+v", during, a.summary(t))
}
