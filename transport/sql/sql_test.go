package sql

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/exactlyonce/exactlyoncetest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/sqlsubscriber"
	"github.com/onceflow/onceflow/transport/transporttest"
)

const sqlTestTopic = "orders.placed"

// newTestSQL is a PostgreSQL transport on pool with the service's default
// configuration, its consumer transactions exactlyonce's, except for fast
// polling and resending: SQL_POLL_INTERVAL and RETRY_INTERVAL of 10ms, so
// a resend after 10 x 10ms, and an ack deadline of RETRY_MAX+1 (4)
// attempts of HANDLER_TIMEOUT (10s) plus that backoff.
func newTestSQL(t *testing.T, pool *pgxpool.Pool) *broker.Transport {
	t.Helper()
	const resend = 100 * time.Millisecond
	return transporttest.Open(t, New, Config{Pool: pool, ServiceName: "onceflow", Beginner: exactlyonce.ConsumerBeginner,
		PollInterval: 10 * time.Millisecond, Redelivery: broker.Redelivery{ResendInterval: resend, AckDeadline: 4 * (10*time.Second + resend)}})
}

// delivery is one message handed to the subscriber named sub.
type delivery struct{ sub, uuid string }

// subscribeSQL subscribes handler's subscriber of tr to sqlTestTopic.
func subscribeSQL(t *testing.T, tr *broker.Transport, handler string) (message.Subscriber, <-chan *message.Message) {
	t.Helper()
	sub, err := tr.Subscriber(handler, 1)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Subscribe(t.Context(), sqlTestTopic)
	if err != nil {
		t.Fatal(err)
	}
	return sub, msgs
}

// consume subscribes handler's subscriber of tr to topic and reports every
// delivery on out before acking it, work after receiving it.
func consume(t *testing.T, tr *broker.Transport, handler, name string, work time.Duration, out chan<- delivery) {
	t.Helper()
	_, msgs := subscribeSQL(t, tr, handler)
	go func() {
		for msg := range msgs {
			time.Sleep(work)
			out <- delivery{name, msg.UUID}
			msg.Ack()
		}
	}()
}

// publish publishes n messages, each in a statement of its own, and
// returns their UUIDs in order.
func publish(t *testing.T, tr *broker.Transport, n int) []string {
	t.Helper()
	var uuids []string
	for i := range n {
		msg := message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprintf(`{"n":%d}`, i)))
		if err := tr.Publisher().Publish(sqlTestTopic, msg); err != nil {
			t.Fatal(err)
		}
		uuids = append(uuids, msg.UUID)
	}
	return uuids
}

// collect reads deliveries until the sentinel, a message published last,
// has been delivered times times (once per consumer group), and counts the
// deliveries of each other message per subscriber. A consumer group reads
// in order, so by then every earlier delivery has been reported.
func collect(t *testing.T, in <-chan delivery, sentinel string, times int) map[string]map[string]int {
	t.Helper()
	got := map[string]map[string]int{}
	timeout := time.After(20 * time.Second)
	for times > 0 {
		select {
		case d := <-in:
			if d.uuid == sentinel {
				times--
				continue
			}
			if got[d.sub] == nil {
				got[d.sub] = map[string]int{}
			}
			got[d.sub][d.uuid]++
		case <-timeout:
			t.Fatalf("timed out; delivered so far: %v", got)
		}
	}
	return got
}

// Two handlers (two consumer groups) on one topic each get every message
// once, including those published before they subscribed.
func TestSQLTransportEveryGroupGetsEveryMessage(t *testing.T) {
	tr := newTestSQL(t, testenv.Postgres(t))
	uuids := publish(t, tr, 10)
	out := make(chan delivery, 1000)
	consume(t, tr, "charge", "charge", 0, out)
	consume(t, tr, "audit", "audit", 0, out)
	uuids = append(uuids, publish(t, tr, 50)...)
	sentinel := publish(t, tr, 1)[0]

	got := collect(t, out, sentinel, 2)
	for _, group := range []string{"charge", "audit"} {
		if len(got[group]) != len(uuids) {
			t.Errorf("group %s got %d distinct messages, want %d", group, len(got[group]), len(uuids))
		}
		for _, id := range uuids {
			if n := got[group][id]; n != 1 {
				t.Errorf("group %s got message %s %d times, want once", group, id, n)
			}
		}
	}
}

// Two replicas' subscribers in one consumer group share a backlog: they take
// turns, and each message reaches exactly one of them, once.
func TestSQLTransportReplicasShareAGroup(t *testing.T) {
	pool := testenv.Postgres(t)
	replica1, replica2 := newTestSQL(t, pool), newTestSQL(t, pool)
	uuids := publish(t, replica1, 10*sqlsubscriber.BatchSize)
	sentinel := publish(t, replica1, 1)[0]
	out := make(chan delivery, 1000)
	// A handler's work makes a batch outlast the poll interval, as it does
	// in production, so that a replica can only get a turn by winning the
	// group's lock when the other releases it.
	const work = time.Millisecond
	consume(t, replica1, "charge", "replica1", work, out)
	consume(t, replica2, "charge", "replica2", work, out)

	got := collect(t, out, sentinel, 1)
	for _, id := range uuids {
		if n := got["replica1"][id] + got["replica2"][id]; n != 1 {
			t.Errorf("message %s delivered %d times, want once", id, n)
		}
	}
	t.Logf("replica1 got %d, replica2 got %d", len(got["replica1"]), len(got["replica2"]))
	if len(got["replica1"]) == 0 || len(got["replica2"]) == 0 {
		t.Errorf("one replica took the whole backlog, want them to take turns")
	}
}

// The sql transport hands out one message of a consumer group at a time
// whatever the in-flight count: the next comes, in order, only once the
// first was acked (see New).
func TestSQLTransportHoldsOneAtATime(t *testing.T) {
	tr := newTestSQL(t, testenv.Postgres(t))
	sub, err := tr.Subscriber("charge", 8)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Subscribe(t.Context(), sqlTestTopic)
	if err != nil {
		t.Fatal(err)
	}
	ids := publish(t, tr, 2)
	first := transporttest.Receive(t, msgs, 1, transporttest.Hold)[0]
	select {
	case m := <-msgs:
		t.Fatalf("got %s while %s was in flight, want one at a time", m.UUID, first.UUID)
	case <-time.After(300 * time.Millisecond):
	}
	first.Ack()
	if second := transporttest.Receive(t, msgs, 1)[0]; first.UUID != ids[0] || second.UUID != ids[1] {
		t.Errorf("got %s then %s, want %v in order", first.UUID, second.UUID, ids)
	}
}

// A nacked message is handed out again before the group's next message:
// delivery within a group is ordered.
func TestSQLTransportRedeliversNacked(t *testing.T) {
	tr := newTestSQL(t, testenv.Postgres(t))
	_, msgs := subscribeSQL(t, tr, "charge")
	uuids := publish(t, tr, 2)

	receive := func() *message.Message {
		t.Helper()
		select {
		case msg := <-msgs:
			return msg
		case <-time.After(20 * time.Second):
			t.Fatal("timed out waiting for a message")
			return nil
		}
	}
	first := receive()
	if first.UUID != uuids[0] {
		t.Fatalf("got %s first, want %s", first.UUID, uuids[0])
	}
	first.Nack()
	if again := receive(); again.UUID != first.UUID {
		t.Fatalf("after a nack got %s, want %s again", again.UUID, first.UUID)
	} else {
		again.Ack()
	}
	if msg := receive(); msg.UUID != uuids[1] {
		t.Fatalf("after the ack got %s, want %s", msg.UUID, uuids[1])
	} else {
		msg.Ack()
	}
}

// A topic whose table name PostgreSQL would truncate, and so perhaps share
// with another topic, is refused: to publish, to subscribe and to create
// its tables.
func TestSQLTransportRefusesTooLongTopics(t *testing.T) {
	tr := newTestSQL(t, testenv.Postgres(t))
	long := strings.Repeat("x", maxTopicLen-len(".requested")+1) + ".requested"
	if err := tr.Publisher().Publish(long, message.NewMessage(watermill.NewUUID(), []byte(`{}`))); err == nil {
		t.Errorf("publishing to %q (%d bytes) succeeded, want an error", long, len(long))
	}
	sub, err := tr.Subscriber("charge", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Subscribe(t.Context(), long); err == nil {
		t.Errorf("subscribing to %q succeeded, want an error", long)
	}
	init, ok := sub.(message.SubscribeInitializer)
	if !ok {
		t.Fatal("the SQL subscriber does not initialize topics")
	}
	if err := init.SubscribeInitialize(long); err == nil {
		t.Errorf("initializing %q succeeded, want an error", long)
	}
}

// A subscriber's subscription has ended when its Close returns, as on
// every transport (watermill-sql's own Close returns a moment before its
// channels close; some rounds catch that moment).
func TestSQLTransportCloseEndsSubscriptions(t *testing.T) {
	tr := newTestSQL(t, testenv.Postgres(t))
	for round := range 20 {
		sub, msgs := subscribeSQL(t, tr, fmt.Sprintf("close%d", round))
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
		transporttest.CheckClosed(t, fmt.Sprintf("round %d: the subscription", round), msgs)
	}
}

// A unit of work open in the consumer transaction when the subscriber
// closes (an attempt a graceful shutdown lets run to its end) holds the
// transaction's end back: the subscriber would otherwise commit it at once,
// on the connection the unit is still using, with the unit half done.
func TestSQLTransportCloseWaitsForAnOpenUnit(t *testing.T) {
	tr := newTestSQL(t, testenv.Postgres(t))
	sub, msgs := subscribeSQL(t, tr, "charge")
	publish(t, tr, 1)
	var msg *message.Message
	select {
	case msg = <-msgs:
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	exactlyoncetest.CloseWaitsForOpenUnit(t, sub, msg.Context())
}
