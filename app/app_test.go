package app

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/consume"
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

// Every request is sent three times, some copies concurrently; the service
// charges, notices and receipts each exactly once, whatever the store.
func TestDuplicatesChargeOnce(t *testing.T) {
	const requests, copies = 50, 3
	for name, env := range storeEnvs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, env(t)...)
			run := uuid.NewString()[:8]
			var wg sync.WaitGroup
			for i := range requests {
				body := flowtest.Body(fmt.Sprintf("req-%s-%d", run, i))
				for range copies {
					wg.Go(func() {
						if code := a.Post(t, flowtest.CreatePath, body); code != http.StatusAccepted {
							t.Errorf("POST: status %d", code)
						}
					})
				}
			}
			wg.Wait()

			flowtest.WaitForCopies(t, a, requests, copies)
			if got, want := flowtest.Tally(t, a), flowtest.Want(requests, requests*copies); got != want {
				t.Errorf("tally = %+v, want %+v", got, want)
			}
			if n := a.Metric(t, "onceflow_poisoned_messages_total"); n != 0 {
				t.Errorf("%v messages poisoned, want none", n)
			}
		})
	}
}

// A malformed message is parked in the poison topic with its reason, and
// the handler goes on consuming the rest.
func TestMalformedMessageIsPoisoned(t *testing.T) {
	a := startApp(t)
	for _, payload := range []string{`not json`, `{"id":"r-1"}`, `{"id":7}`} {
		msg := message.NewMessage(uuid.NewString(), []byte(payload))
		if err := a.transport.Publisher().Publish(testdomain.TopicRequested, msg); err != nil {
			t.Fatal(err)
		}
	}
	flowtest.PostOK(t, a, "after-poison")
	waitFor(t, "poisoned messages and the valid one", func() bool {
		return a.Metric(t, "onceflow_poisoned_messages_total", "topic", testdomain.TopicRequested) == 3 &&
			flowtest.Tally(t, a).Charges.Rows == 1
	})
	if n := flowtest.Outcomes(t, a, testdomain.ChargeRoute, "failed"); n < 3 {
		t.Errorf("the charge route failed %v times, want each malformed message to fail once", n)
	}
}

// A message over MAX_MESSAGE_BYTES is poisoned before any handler or
// record sees it; the handlers go on with the rest.
func TestOversizeMessageIsPoisoned(t *testing.T) {
	a := startApp(t, "MAX_MESSAGE_BYTES=512")
	big := fmt.Sprintf(`{"id":"big","amount":1,"note":%q}`, strings.Repeat("c", 512))
	if err := a.transport.Publisher().Publish(testdomain.TopicRequested, message.NewMessage(uuid.NewString(), []byte(big))); err != nil {
		t.Fatal(err)
	}
	flowtest.PostOK(t, a, "small")
	waitFor(t, "the oversize message poisoned and the other charged", func() bool {
		return a.Metric(t, "onceflow_poisoned_messages_total", "topic", testdomain.TopicRequested) == 1 &&
			flowtest.Tally(t, a).Charges.Rows == 1
	})
	if n := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", testdomain.ChargeRoute); n != 1 {
		t.Errorf("the charge route's receiver saw %v messages, want the small one only", n)
	}
}

// Messages published straight to the poison topic make no record: with
// room for 20 records and signing on, 50 unsigned ones, each with a key of
// its own, are logged and counted (as "other": they name no topic of the
// service), and a real payment is then charged. The poison topic's reader
// used to claim each of them; the store full, a payment was answered 202
// and never charged.
func TestThePoisonTopicIsNoSideDoor(t *testing.T) {
	var log testenv.Buffer
	a := startAppLogging(t, seams{}, teeLogger(t, &log), "MEMORY_MAX_RECORDS=20", "MESSAGE_SIGNING_SECRETS="+sharedSecret)
	const sent = 50
	for i := range sent {
		msg := message.NewMessage(uuid.NewString(), []byte(`{"id":"side-door","amount":1}`))
		msg.Metadata.Set(consume.MetadataKey, fmt.Sprintf("side-door-%d", i))
		if err := a.transport.Publisher().Publish(PoisonTopic, msg); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every message of the poison topic counted", func() bool {
		return a.Metric(t, "onceflow_poisoned_messages_total", "topic", "other") == sent
	})
	flowtest.PostOK(t, a, "after-side-door")
	waitFor(t, "the real payment charged", func() bool { return flowtest.Tally(t, a).Charges.Rows == 1 })
	if n := strings.Count(log.String(), `msg="message poisoned"`); n != sent {
		t.Errorf("%d lines logged for the poison topic's messages, want one each, %d", n, sent)
	}
	if strings.Contains(log.String(), "store_full") || strings.Contains(log.String(), "store is full") {
		t.Errorf("the store filled up:\n%s", log.String())
	}
}

// Health and readiness answer, and cancelling Run shuts down cleanly.
func TestHealthAndGracefulShutdown(t *testing.T) {
	a := startApp(t)
	if code := a.Get(t, "/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz: status %d", code)
	}
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if code := a.Get(t, "/readyz", &ready); code != http.StatusOK || ready.Checks["store"] != "ok" {
		t.Errorf("/readyz: status %d %+v", code, ready)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("Run after cancel: %v, want a clean shutdown", err)
	}
	if _, err := http.Get(a.base + "/healthz"); err == nil {
		t.Error("HTTP still served after shutdown")
	}
}
