package app

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/consume"
)

// With MESSAGE_SIGNING_SECRETS a producer without the secret cannot
// pre-empt a payment's key: its message is poisoned before anything is
// claimed. What the service's own producers send is signed and handled:
// a payment posted to the API, payments a trusted producer publishes
// (OpenProducer, as `onceflow publish` does), and the events the handlers
// produce, published by the router in lease mode and by the outbox's relay
// in transaction mode.
func TestSignedMessagesOnly(t *testing.T) {
	for _, mode := range []string{"lease", "transaction"} {
		t.Run(mode, func(t *testing.T) {
			env, _ := redisStreamAppEnv(t)
			env = append(env, "MESSAGE_SIGNING_SECRETS=a-secret-of-32-characters-or-more,"+testenv.NewID()+testenv.NewID())
			if mode == "transaction" {
				env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
			}
			a := startApp(t, env...)

			forged := message.NewMessage(watermill.NewUUID(), []byte(
				`{"payment_id":"pay-signed-0","customer_id":"attacker","amount_cents":1,"currency":"EUR","requested_at":"2030-01-02T03:04:05Z"}`))
			forged.Metadata.Set(consume.MetadataKey, "pay-signed-0")
			if err := a.transport.Publisher().Publish(handlers.TopicPaymentRequested, forged); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the unsigned message poisoned", func() bool {
				return a.metric(t, "onceflow_poisoned_messages_total", "topic", handlers.TopicPaymentRequested) == 1
			})

			if code := a.post(t, "/v1/payments", paymentBody("pay-signed-0")); code != http.StatusAccepted {
				t.Fatalf("POST: status %d", code)
			}
			producer, err := OpenProducer(t.Context(), a.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer producer.Close()
			publishPlainPayments(t, producer, handlers.TopicPaymentRequested, 2, 1)

			const want = 3
			waitFor(t, fmt.Sprintf("%d payments charged, notified and given a receipt", want), func() bool {
				s := a.summary(t)
				return s.Charges == want && s.Notifications == want && a.receipts(t) == want
			})
			if n := a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler); n != want {
				t.Errorf("charge_payment's receiver saw %v messages, want the %d signed ones only", n, want)
			}
			if n := a.metric(t, "onceflow_poisoned_messages_total"); n != 1 {
				t.Errorf("%v messages poisoned, want the unsigned one only: every event the service produced verifies", n)
			}
		})
	}
}
