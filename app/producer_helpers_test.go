package app

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
)

// publishPlainPayments is the message contract as another team's producer
// follows it, with Watermill's packages alone: for each of n payments,
// copies messages on topic, each with a new UUID, the same JSON payload and
// metadata idempotency_key = the payment id.
func publishPlainPayments(t *testing.T, pub message.Publisher, topic string, n, copies int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("pay-plain-%d", i)
		payload := fmt.Sprintf(`{"payment_id":%q,"customer_id":"cust-7","amount_cents":%d,"currency":"EUR","requested_at":"2030-01-02T03:04:05Z"}`,
			id, 100+i)
		for range copies {
			msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
			msg.Metadata.Set("idempotency_key", id)
			if err := pub.Publish(topic, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// plainProducerChargesOnce sends 3 payments twice each through pub, another
// team's producer, to topic, and checks that a charges and notifies each
// once.
func plainProducerChargesOnce(t *testing.T, a *running, pub message.Publisher, topic string) {
	t.Helper()
	const payments, copies = 3, 2
	publishPlainPayments(t, pub, topic, payments, copies)
	waitForCopies(t, a, payments, copies)
	if got := a.summary(t); got.Charges != payments || got.Notifications != payments {
		t.Errorf("summary = %+v, want %d charges and %d notifications", got, payments, payments)
	}
}

// malformedIsPoisoned publishes payload, a malformed payment request, on
// a's transport, then posts a valid payment, and waits until the first is
// poisoned and the second charged: the handler goes on past a poisoned
// message.
func malformedIsPoisoned(t *testing.T, a *running, payload string) {
	t.Helper()
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	if err := a.transport.Publisher().Publish(handlers.TopicPaymentRequested, msg); err != nil {
		t.Fatal(err)
	}
	if code := a.post(t, "/v1/payments", paymentBody("pay-after-poison")); code != http.StatusAccepted {
		t.Fatalf("POST: status %d", code)
	}
	waitFor(t, "the malformed message poisoned and the valid one charged", func() bool {
		return a.metric(t, "onceflow_poisoned_messages_total", "topic", handlers.TopicPaymentRequested) == 1 &&
			a.summary(t).Charges == 1
	})
}

// waitForCopies waits until every route of the payments domain has seen
// every copy of every payment on a: one processed, the rest recognised as
// duplicates (the charge handler replays its PaymentCharged for each
// duplicate, so the handlers of payments.charged see as many copies). The
// routes are looped over, not named: a handler added to
// [handlers.MessageHandlers.Routes] is checked on every transport whose
// test calls this, with no edit here. It then checks the ledger holds one
// receipt per payment, the side effect of the one handler that app knows
// nothing of. a's ledger must hold these payments only.
func waitForCopies(t *testing.T, a *running, payments, copies int) {
	t.Helper()
	routes := paymentRoutes()
	waitFor(t, "every copy handled", func() bool {
		for _, r := range routes {
			if a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "processed") != float64(payments) ||
				a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "duplicate") != float64(payments*(copies-1)) {
				return false
			}
		}
		return true
	})
	if got := a.receipts(t); got != payments {
		t.Errorf("ledger holds %d receipts, want one for each of %d payments", got, payments)
	}
}

// postThriceChargesOnce sends payment id three times through a's API and
// checks that every route handles it exactly once: it is charged, notified
// and given a receipt once.
func postThriceChargesOnce(t *testing.T, a *running, id string) {
	t.Helper()
	for range 3 {
		if code := a.post(t, "/v1/payments", paymentBody(id)); code != http.StatusAccepted {
			t.Fatalf("POST: status %d", code)
		}
	}
	waitForCopies(t, a, 1, 3)
	if got, want := a.summary(t), (summary{1, 1, 1}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
}

// replicasChargeOnce starts two replicas of the service on env, sharing
// store and ledger in a PostgreSQL schema of their own, as replicas in
// production do (RETRY_MAX=0 sends a copy found in progress elsewhere
// back to the broker at once instead of retrying it in process). It posts
// 20 payments three times each, the copies concurrently and alternately to
// either replica, and waits until every route has counted seen deliveries
// per payment across the two in the given outcomes. Each payment must be
// charged, notified and given a receipt once, and both replicas must have
// charged: the work is shared.
func replicasChargeOnce(t *testing.T, env []string, seen int, outcomes ...string) {
	t.Helper()
	const payments, copies = 20, 3
	env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "RETRY_MAX=0")
	replicas := []*running{startApp(t, env...), startApp(t, env...)}
	run := testenv.NewID()[:8]
	var wg sync.WaitGroup
	for i := range payments {
		body := paymentBody(fmt.Sprintf("pay-%s-%d", run, i))
		for c := range copies {
			wg.Go(func() {
				if code := replicas[(i+c)%2].post(t, "/v1/payments", body); code != http.StatusAccepted {
					t.Errorf("POST: status %d", code)
				}
			})
		}
	}
	wg.Wait()

	counted := func(a *running, handler string) float64 {
		var n float64
		for _, o := range outcomes {
			n += a.metric(t, "onceflow_receiver_outcomes_total", "scope", handler, "outcome", o)
		}
		return n
	}
	waitFor(t, "every delivery handled", func() bool {
		for _, r := range paymentRoutes() {
			if counted(replicas[0], r.Name)+counted(replicas[1], r.Name) != float64(payments*seen) {
				return false
			}
		}
		return true
	})
	if got, want := replicas[0].summary(t), (summary{payments, payments, payments}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
	if got := replicas[0].receipts(t); got != payments {
		t.Errorf("ledger holds %d receipts, want one for each of %d payments", got, payments)
	}
	for i, a := range replicas {
		if a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "processed") == 0 {
			t.Errorf("replica %d charged no payment, want the work shared", i+1)
		}
	}
}
