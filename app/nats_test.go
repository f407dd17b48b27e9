package app

import (
	"net/http"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/broker"
)

// The service on NATS: a payment posted three times is charged, notified
// and given a receipt once. The three copies carry the same key, so the
// stream keeps the first and drops the other two as duplicates (acked to
// the API, not errors): the handlers see one message, where other
// transports deliver three and the receiver recognises two.
func TestNATSAppChargesOnce(t *testing.T) {
	env, url, prefix := natsAppEnv(t)
	a := startApp(t, env...)
	for range 3 {
		if code := a.post(t, "/v1/payments", paymentBody("pay-nats-1")); code != http.StatusAccepted {
			t.Fatalf("POST: status %d", code)
		}
	}
	natsWaitForCopies(t, a, 1, 1)
	if got, want := a.summary(t), (summary{1, 1, 1}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
	for _, topic := range []string{handlers.TopicPaymentRequested, handlers.TopicPaymentCharged} {
		if n := brokerenv.NATSStreamMessages(t, url, broker.NATSStream(prefix+topic)); n != 1 {
			t.Errorf("stream of %s holds %d messages, want 1: the server keeps one of the copies", topic, n)
		}
	}
}

// Two replicas of the service share each handler's durable consumer, and
// each payment is charged and notified once across the two. Copies of a
// payment posted to either replica are dropped by the stream, whichever
// replica published them.
func TestNATSReplicasChargeOnce(t *testing.T) {
	env, _, _ := natsAppEnv(t)
	replicasChargeOnce(t, env, 1, "processed", "duplicate")
}

// A producer built from watermill-nats alone, with its default JetStream
// publisher configuration, feeds the service: the message contract of
// docs/brokers.md. Its copies have UUIDs of their own and no Nats-Msg-Id, so the
// stream keeps them all and the receiver recognises them; the events the
// service publishes in reply carry the key, so the stream of
// payments.charged drops the replays.
func TestNATSPlainWatermillProducer(t *testing.T) {
	env, url, prefix := natsAppEnv(t)
	a := startApp(t, env...)

	pub, err := wmnats.NewPublisher(wmnats.PublisherConfig{URL: url}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	const payments, copies = 3, 2
	publishPlainPayments(t, pub, prefix+handlers.TopicPaymentRequested, payments, copies)
	natsWaitForCopies(t, a, payments, copies)
	if got := a.summary(t); got.Charges != payments || got.Notifications != payments {
		t.Errorf("summary = %+v, want %d charges and %d notifications", got, payments, payments)
	}
}

// A malformed message is parked in the poison stream, and the handler goes
// on with the next one.
func TestNATSMalformedMessageIsPoisoned(t *testing.T) {
	env, _, _ := natsAppEnv(t)
	a := startApp(t, env...)
	malformedIsPoisoned(t, a, "not json")
}

// In transaction mode each payment's event goes through the outbox, whose
// relay publishes it to NATS: a payment posted three times is still
// charged, notified and given a receipt once.
func TestNATSTransactionModeChargesOnce(t *testing.T) {
	env, _, _ := natsAppEnv(t)
	env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	a := startApp(t, env...)
	for range 3 {
		if code := a.post(t, "/v1/payments", paymentBody("pay-nats-tx")); code != http.StatusAccepted {
			t.Fatalf("POST: status %d", code)
		}
	}
	waitFor(t, "the payment charged, notified and receipted", func() bool {
		return a.summary(t) == summary{1, 1, 1} && a.receipts(t) == 1
	})
	time.Sleep(300 * time.Millisecond) // a second charge would show now
	if got, want := a.summary(t), (summary{1, 1, 1}); got != want || a.receipts(t) != 1 {
		t.Errorf("summary = %+v with %d receipts, want %+v and 1", got, a.receipts(t), want)
	}
}

// Start-up against a closed port fails at once with one line naming
// NATS_URL, its password masked.
func TestNATSStartupUnreachable(t *testing.T) {
	testenv.Integration(t)
	addr := testenv.ClosedAddr(t)
	startupFails(t, []string{"TRANSPORT=nats", "NATS_URL=nats://svc:s3cret@" + addr}, "NATS_URL=nats://svc:xxxxx@"+addr, "s3cret", 3*time.Second)
}

// natsAppEnv is the environment of an App on the test NATS server with
// streams and consumers of its own, deleted when the test ends.
func natsAppEnv(t *testing.T) (env []string, url, prefix string) {
	url = brokerenv.NATS(t)
	prefix, service := testenv.Names()
	brokerenv.DeleteNATSStreamsOnCleanup(t, url, broker.NATSStream(prefix))
	return []string{"TRANSPORT=nats", "NATS_URL=" + url, "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}, url, prefix
}

// natsWaitForCopies is waitForCopies as NATS delivers: each route
// processes every payment once; the routes of payments.requested
// recognise the copies a producer sent (copies-1 a payment: copies without
// Nats-Msg-Id, which the stream keeps), while the routes downstream see no
// copy at all, the stream having dropped the events the charge handler
// replayed for each, which carry the payment's key. Then one receipt per
// payment.
func natsWaitForCopies(t *testing.T, a *running, payments, copies int) {
	t.Helper()
	waitFor(t, "every copy handled", func() bool {
		for _, r := range paymentRoutes() {
			dup := 0
			if r.Consumes == handlers.TopicPaymentRequested {
				dup = payments * (copies - 1)
			}
			if a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "processed") != float64(payments) ||
				a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "duplicate") != float64(dup) {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond) // a copy the stream kept would show now
	for _, r := range paymentRoutes() {
		if r.Consumes != handlers.TopicPaymentRequested {
			if n := a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "duplicate"); n != 0 {
				t.Errorf("route %s saw %v copies, want none: the stream drops a replayed event", r.Name, n)
			}
		}
	}
	if got := a.receipts(t); got != payments {
		t.Errorf("ledger holds %d receipts, want one for each of %d payments", got, payments)
	}
}
