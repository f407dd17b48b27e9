package nats_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// serviceEnv is the environment of a service of the test domain on the
// test NATS server with streams and consumers of its own, deleted when the
// test ends.
func serviceEnv(t *testing.T) []string {
	t.Helper()
	return brokerenv.ServiceEnv(t, transport.NATS, nil)
}

// The service on NATS: a request posted three times is charged, noticed
// and receipted once. The three copies carry the same key, so the stream
// keeps the first and drops the other two as duplicates (acked to the
// API, not errors): the routes see one message, where other transports
// deliver three and the receiver recognises two.
func TestNATSAppChargesOnce(t *testing.T) {
	env := serviceEnv(t)
	s := apptest.Start(t, testdomain.Domain(), env...)
	for range 3 {
		flowtest.PostOK(t, s, "req-nats-1")
	}
	waitForCopies(t, s, 1, 1)
	if got, want := flowtest.Tally(t, s), flowtest.Want(1, 3); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
	url, prefix := testenv.Setting(env, "NATS_URL"), testenv.Setting(env, "TOPIC_PREFIX")
	for _, topic := range []string{testdomain.TopicRequested, testdomain.TopicCharged} {
		if n := brokerenv.NATSStreamMessages(t, url, broker.NATSStream(prefix+topic)); n != 1 {
			t.Errorf("stream of %s holds %d messages, want 1: the server keeps one of the copies", topic, n)
		}
	}
}

// Two replicas of the service share each route's durable consumer, and
// each request is charged, noticed and receipted once across the two.
// Copies of a request posted to either replica are dropped by the stream,
// whichever replica published them.
func TestNATSReplicasChargeOnce(t *testing.T) {
	flowtest.ReplicasChargeOnce(t, apptest.Start, serviceEnv(t), 1, "processed", "duplicate")
}

// A producer built from watermill-nats alone, with its default JetStream
// publisher configuration, feeds the service: the message contract of
// docs/brokers.md. Its copies have UUIDs of their own and no Nats-Msg-Id,
// so the stream keeps them all and the receiver recognises them; the
// events the service publishes in reply carry the key, so the stream of
// the charged topic drops the replays.
func TestNATSPlainWatermillProducer(t *testing.T) {
	env := serviceEnv(t)
	s := apptest.Start(t, testdomain.Domain(), env...)

	pub, err := wmnats.NewPublisher(wmnats.PublisherConfig{URL: testenv.Setting(env, "NATS_URL")}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	const requests, copies = 3, 2
	flowtest.PublishPlain(t, pub, testenv.Setting(env, "TOPIC_PREFIX")+testdomain.TopicRequested, requests, copies)
	waitForCopies(t, s, requests, copies)
	if got, want := flowtest.Tally(t, s), flowtest.Want(requests, 0); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

// A malformed message is parked in the poison stream, and the route goes
// on with the next one.
func TestNATSMalformedMessageIsPoisoned(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.MalformedIsPoisoned(t, s, s.Producer(t), "not json")
}

// In transaction mode each request's event goes through the outbox, whose
// relay publishes it to NATS: a request posted three times is still
// charged, noticed and receipted once.
func TestNATSTransactionModeChargesOnce(t *testing.T) {
	env := append(serviceEnv(t), "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	s := apptest.Start(t, testdomain.Domain(), env...)
	for range 3 {
		flowtest.PostOK(t, s, "req-nats-tx")
	}
	want := flowtest.Want(1, 3)
	testenv.WaitFor(t, flowtest.Wait, "the request charged, noticed and receipted", func() bool {
		return flowtest.Tally(t, s) == want
	})
	time.Sleep(300 * time.Millisecond) // a second charge would show now
	if got := flowtest.Tally(t, s); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

// The service's start-up against a closed port fails at once with one
// line naming NATS_URL, its password masked.
func TestNATSServiceStartupUnreachable(t *testing.T) {
	testenv.Integration(t)
	addr := testenv.ClosedAddr(t)
	apptest.StartFails(t, testdomain.Domain(), []string{"TRANSPORT=nats", "NATS_URL=nats://svc:s3cret@" + addr},
		"NATS_URL=nats://svc:xxxxx@"+addr, "s3cret", 3*time.Second)
}

// waitForCopies is flowtest.WaitForCopies as NATS delivers: each route
// processes every request once; the routes of the requested topic
// recognise the copies a producer sent (copies-1 a request: copies
// without Nats-Msg-Id, which the stream keeps), while the routes
// downstream see no copy at all, the stream having dropped the events the
// charge route replayed for each, which carry the request's key. Then one
// receipt per request.
func waitForCopies(t *testing.T, s *apptest.Service, requests, copies int) {
	t.Helper()
	routes := testdomain.Routes()
	testenv.WaitFor(t, flowtest.Wait, "every copy handled", func() bool {
		for _, r := range routes {
			dup := 0
			if r.Consumes == testdomain.TopicRequested {
				dup = requests * (copies - 1)
			}
			if flowtest.Outcomes(t, s, r.Name, "processed") != float64(requests) ||
				flowtest.Outcomes(t, s, r.Name, "duplicate") != float64(dup) {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond) // a copy the stream kept would show now
	for _, r := range routes {
		if r.Consumes != testdomain.TopicRequested {
			if n := flowtest.Outcomes(t, s, r.Name, "duplicate"); n != 0 {
				t.Errorf("route %s saw %v copies, want none: the stream drops a replayed event", r.Name, n)
			}
		}
	}
	if got, want := flowtest.Tally(t, s).Receipts, flowtest.Want(requests, 0).Receipts; got != want {
		t.Errorf("the ledger holds receipts %+v, want one for each of %d requests", got, requests)
	}
}
