package app

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
)

// storeEnvs are the stores the service runs with, as the environment
// selects them. The networked ones need their service (see internal/testenv).
func storeEnvs(t *testing.T) map[string]func(t *testing.T) []string {
	return map[string]func(t *testing.T) []string{
		"memory": func(*testing.T) []string { return []string{"STORE=memory"} },
		"redis": func(t *testing.T) []string {
			testenv.Redis(t) // skips or fails when Redis is down
			return []string{"STORE=redis", "REDIS_URL=redis://" + testenv.RedisAddr() + "/0"}
		},
		"postgres": func(t *testing.T) []string {
			return []string{"STORE=postgres", "DATABASE_URL=" + testenv.PostgresSchema(t)}
		},
	}
}

// Every payment is sent three times, some copies concurrently; the service
// charges and notifies each exactly once, whatever the store.
func TestDuplicatesChargeOnce(t *testing.T) {
	const payments, copies = 50, 3
	for name, env := range storeEnvs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, env(t)...)
			run := uuid.NewString()[:8]
			var wg sync.WaitGroup
			for i := range payments {
				body := paymentBody(fmt.Sprintf("pay-%s-%d", run, i))
				for range copies {
					wg.Go(func() {
						if code := a.post(t, "/v1/payments", body); code != http.StatusAccepted {
							t.Errorf("POST: status %d", code)
						}
					})
				}
			}
			wg.Wait()

			waitForCopies(t, a, payments, copies)
			if got, want := a.summary(t), (summary{payments, payments, payments}); got != want {
				t.Errorf("summary = %+v, want %+v", got, want)
			}
			if n := a.metric(t, "onceflow_poisoned_messages_total"); n != 0 {
				t.Errorf("%v messages poisoned, want none", n)
			}
		})
	}
}

// A malformed message is parked in the poison topic with its reason, and
// the handler goes on consuming the rest.
func TestMalformedMessageIsPoisoned(t *testing.T) {
	a := startApp(t)
	for _, payload := range []string{`not json`, `{"payment_id":"p-1"}`, `{"payment_id":7}`} {
		msg := message.NewMessage(uuid.NewString(), []byte(payload))
		if err := a.transport.Publisher().Publish(handlers.TopicPaymentRequested, msg); err != nil {
			t.Fatal(err)
		}
	}
	if code := a.post(t, "/v1/payments", paymentBody("pay-after-poison")); code != http.StatusAccepted {
		t.Fatalf("POST: status %d", code)
	}
	waitFor(t, "poisoned messages and the valid one", func() bool {
		return a.metric(t, "onceflow_poisoned_messages_total", "topic", handlers.TopicPaymentRequested) == 3 &&
			a.summary(t).Charges == 1
	})
	if n := a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "failed"); n < 3 {
		t.Errorf("charge_payment failed %v times, want each malformed message to fail once", n)
	}
}

// A message over MAX_MESSAGE_BYTES is poisoned before any handler or
// record sees it; the handlers go on with the rest.
func TestOversizeMessageIsPoisoned(t *testing.T) {
	a := startApp(t, "MAX_MESSAGE_BYTES=512")
	big := fmt.Sprintf(`{"payment_id":"pay-big","customer_id":%q,"amount_cents":1,"currency":"EUR"}`, strings.Repeat("c", 512))
	if err := a.transport.Publisher().Publish(handlers.TopicPaymentRequested, message.NewMessage(uuid.NewString(), []byte(big))); err != nil {
		t.Fatal(err)
	}
	if code := a.post(t, "/v1/payments", paymentBody("pay-small")); code != http.StatusAccepted {
		t.Fatalf("POST: status %d", code)
	}
	waitFor(t, "the oversize message poisoned and the other charged", func() bool {
		return a.metric(t, "onceflow_poisoned_messages_total", "topic", handlers.TopicPaymentRequested) == 1 &&
			a.summary(t).Charges == 1
	})
	if n := a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler); n != 1 {
		t.Errorf("charge_payment's receiver saw %v messages, want the small one only", n)
	}
}

// Health and readiness answer, and cancelling Run shuts down cleanly.
func TestHealthAndGracefulShutdown(t *testing.T) {
	a := startApp(t)
	if code := a.get(t, "/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz: status %d", code)
	}
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if code := a.get(t, "/readyz", &ready); code != http.StatusOK || ready.Checks["store"] != "ok" {
		t.Errorf("/readyz: status %d %+v", code, ready)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("Run after cancel: %v, want a clean shutdown", err)
	}
	if _, err := http.Get(a.base + "/healthz"); err == nil {
		t.Error("HTTP still served after shutdown")
	}
}
