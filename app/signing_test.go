package app

import (
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport"
)

// With MESSAGE_SIGNING_SECRETS a producer without the secret cannot
// pre-empt a request's key: its message is poisoned before anything is
// claimed. What the service's own producers send is signed and handled: a
// request posted to the API, requests a trusted producer publishes
// (OpenProducer, as a domain's commands do), and the events the routes
// produce, published by the router in lease mode and by the outbox's relay
// in transaction mode. On Redis Streams, a broker that other processes
// publish to and that keeps every copy it is sent.
func TestSignedMessagesOnly(t *testing.T) {
	if !builtIn(transport.RedisStream) {
		t.Skip("the build has no redisstream transport")
	}
	for _, mode := range []string{"lease", "transaction"} {
		t.Run(mode, func(t *testing.T) {
			env := append(serviceEnv(t, transport.RedisStream), "MESSAGE_SIGNING_SECRETS=a-secret-of-32-characters-or-more,"+testenv.NewID()+testenv.NewID())
			if mode == "transaction" {
				env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
			}
			a := startApp(t, env...)

			forged := testdomain.Event{ID: "signed-0", Amount: 1}.Message()
			if err := a.transport.Publisher().Publish(testdomain.TopicRequested, forged); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the unsigned message poisoned", func() bool {
				return a.Metric(t, "onceflow_poisoned_messages_total", "topic", testdomain.TopicRequested) == 1
			})

			flowtest.PostOK(t, a, "signed-0")
			producer, err := OpenProducer(t.Context(), a.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer producer.Close()
			flowtest.PublishPlain(t, producer, testdomain.TopicRequested, 2, 1)

			const want = 3
			waitFor(t, "3 requests charged, noticed and receipted", func() bool {
				got := flowtest.Tally(t, a)
				return got.Charges.Rows == want && got.Notices.Rows == want && got.Receipts.Rows == want
			})
			if n := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", testdomain.ChargeRoute); n != want {
				t.Errorf("the charge route's receiver saw %v messages, want the %d signed ones only", n, want)
			}
			if n := a.Metric(t, "onceflow_poisoned_messages_total"); n != 1 {
				t.Errorf("%v messages poisoned, want the unsigned one only: every event the service produced verifies", n)
			}
		})
	}
}
