package flowtest

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// WaitForCopies waits until every route of the test domain has seen every
// copy of every request on s: one processed, the rest recognised as
// duplicates (the charge route replays its event for each duplicate, so
// the routes of TopicCharged see as many copies). The routes are looped
// over, not named: a route added to the domain is checked on every broker
// whose test calls this. It then checks that the ledger holds one receipt
// per request, the effect of the route the service knows nothing of. s's
// ledger must hold these requests only.
func WaitForCopies(t testing.TB, s Service, requests, copies int) {
	t.Helper()
	routes := testdomain.Routes()
	testenv.WaitFor(t, Wait, "every copy handled", func() bool {
		for _, r := range routes {
			if Outcomes(t, s, r.Name, "processed") != float64(requests) ||
				Outcomes(t, s, r.Name, "duplicate") != float64(requests*(copies-1)) {
				return false
			}
		}
		return true
	})
	if got, want := Tally(t, s).Receipts, Want(requests, 0).Receipts; got != want {
		t.Errorf("the ledger holds receipts %+v, want one for each of %d requests", got, requests)
	}
}

// PostThriceChargesOnce posts the request id three times to s, each with
// an Idempotency-Key of its own, and checks that every route handles it
// exactly once: it is charged, noticed and receipted once.
func PostThriceChargesOnce(t testing.TB, s Service, id string) {
	t.Helper()
	for range 3 {
		PostOK(t, s, id)
	}
	WaitForCopies(t, s, 1, 3)
	if got, want := Tally(t, s), Want(1, 3); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

// PublishPlain is the message contract as another team's producer follows
// it, with Watermill's packages alone ([testdomain.Event.Message]): for
// each of n requests, copies messages on topic, each with a new UUID, the
// same JSON payload and metadata idempotency_key = the request's id.
func PublishPlain(t testing.TB, pub message.Publisher, topic string, n, copies int) {
	t.Helper()
	for i := range n {
		e := testdomain.Event{ID: fmt.Sprintf("plain-%d", i), Amount: int64(100 + i)}
		for range copies {
			if err := pub.Publish(topic, e.Message()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// PlainProducerChargesOnce sends 3 requests twice each through pub,
// another team's producer, to topic (as it is on the broker), and checks
// that s charges, notices and receipts each once.
func PlainProducerChargesOnce(t testing.TB, s Service, pub message.Publisher, topic string) {
	t.Helper()
	const requests, copies = 3, 2
	PublishPlain(t, pub, topic, requests, copies)
	WaitForCopies(t, s, requests, copies)
	if got, want := Tally(t, s), Want(requests, 0); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

// MalformedIsPoisoned publishes payload, a malformed request, through pub
// (a publisher that prefixes topics as s does) on TopicRequested, then
// posts a valid request, and waits until the first is poisoned and the
// second charged: the route goes on past a poisoned message.
func MalformedIsPoisoned(t testing.TB, s Service, pub message.Publisher, payload string) {
	t.Helper()
	if err := pub.Publish(testdomain.TopicRequested, message.NewMessage(watermill.NewUUID(), []byte(payload))); err != nil {
		t.Fatal(err)
	}
	PostOK(t, s, "after-poison")
	testenv.WaitFor(t, Wait, "the malformed message poisoned and the valid one charged", func() bool {
		return s.Metric(t, "onceflow_poisoned_messages_total", "topic", testdomain.TopicRequested) == 1 &&
			Tally(t, s).Charges.Rows == 1
	})
}

// ReplicasChargeOnce starts two replicas of the service on env, sharing
// store and ledger in a PostgreSQL schema of their own, as replicas in
// production do (RETRY_MAX=0 sends a copy found in progress elsewhere
// back to the broker at once instead of retrying it in process). It posts
// 20 requests three times each, the copies concurrently and alternately
// to either replica, and waits until every route has counted seen
// deliveries per request across the two in the given outcomes. Each
// request must be charged, noticed and receipted once, and both replicas
// must have charged: the work is shared. start starts each replica with
// the test domain: apptest.Start is one.
func ReplicasChargeOnce[S Service](t testing.TB, start func(testing.TB, domain.Domain, ...string) S, env []string, seen int, outcomes ...string) {
	t.Helper()
	const requests, copies = 20, 3
	env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "RETRY_MAX=0")
	replicas := []Service{start(t, testdomain.Domain(), env...), start(t, testdomain.Domain(), env...)}
	run := testenv.NewID()[:8]
	var wg sync.WaitGroup
	for i := range requests {
		body := Body(fmt.Sprintf("req-%s-%d", run, i))
		for c := range copies {
			wg.Go(func() {
				if code := replicas[(i+c)%2].Post(t, CreatePath, body); code != http.StatusAccepted {
					t.Errorf("POST: status %d", code)
				}
			})
		}
	}
	wg.Wait()

	counted := func(s Service, route string) float64 {
		var n float64
		for _, o := range outcomes {
			n += Outcomes(t, s, route, o)
		}
		return n
	}
	routes := testdomain.Routes()
	testenv.WaitFor(t, Wait, "every delivery handled", func() bool {
		for _, r := range routes {
			if counted(replicas[0], r.Name)+counted(replicas[1], r.Name) != float64(requests*seen) {
				return false
			}
		}
		return true
	})
	if got, want := Tally(t, replicas[0]), Want(requests, requests*copies); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
	for i, s := range replicas {
		if Outcomes(t, s, testdomain.ChargeRoute, "processed") == 0 {
			t.Errorf("replica %d charged no request, want the work shared", i+1)
		}
	}
}
