package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The transport on its own: fan-out to every handler's queue, work shared
// by the replicas of one handler, redelivery of a nacked message.
func TestAMQPTransport(t *testing.T) {
	url := testenv.AMQP(t)
	prefix, service := amqpNames()
	cfg := Config{AMQPURL: url, AMQPConnectTimeout: 5 * time.Second, ServiceName: service}
	newTransport := func(t *testing.T) transport {
		tr, err := newAMQP(t.Context(), cfg, watermill.NopLogger{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := tr.close(); err != nil {
				t.Errorf("closing transport: %v", err)
			}
		})
		return withTopicPrefix(tr, prefix)
	}
	queue := func(topic, handler string) string { return prefix + topic + "_" + service + "." + handler }
	deleteAMQPOnCleanup(t, url,
		[]string{prefix + "fanout", prefix + "shared", prefix + "nack"},
		[]string{queue("fanout", "a"), queue("fanout", "b"), queue("shared", "r"), queue("nack", "n")})
	tr := newTransport(t)

	t.Run("every handler gets every message", func(t *testing.T) {
		a, b := subscribe(t, tr, "a", "fanout"), subscribe(t, tr, "b", "fanout")
		sent := publishN(t, tr, "fanout", 10)
		for name, ch := range map[string]<-chan *message.Message{"a": a, "b": b} {
			got := receive(t, ch, len(sent))
			for _, m := range got {
				want, ok := sent[m.UUID]
				if !ok || string(m.Payload) != string(want.Payload) || m.Metadata.Get("idempotency_key") != want.Metadata.Get("idempotency_key") {
					t.Errorf("handler %s got %s %q %v, not a message that was sent", name, m.UUID, m.Payload, m.Metadata)
				}
			}
			if len(uuids(got)) != len(sent) {
				t.Errorf("handler %s got %d distinct messages, want %d", name, len(uuids(got)), len(sent))
			}
		}
	})

	t.Run("replicas share a handler's queue", func(t *testing.T) {
		replica1, replica2 := subscribe(t, tr, "r", "shared"), subscribe(t, newTransport(t), "r", "shared")
		waitConsumers(t, url, queue("shared", "r"), 2)
		sent := publishN(t, tr, "shared", 20)

		var mu sync.Mutex
		got := map[int][]*message.Message{}
		for i, ch := range []<-chan *message.Message{replica1, replica2} {
			go func() { // until the subscription ends with the subtest
				for m := range ch {
					m.Ack()
					mu.Lock()
					got[i] = append(got[i], m)
					mu.Unlock()
				}
			}()
		}
		waitFor(t, "every message consumed", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got[0])+len(got[1]) >= len(sent)
		})
		mu.Lock()
		defer mu.Unlock()
		if len(got[0]) == 0 || len(got[1]) == 0 {
			t.Errorf("replicas got %d and %d messages, want the work split between them", len(got[0]), len(got[1]))
		}
		if all := uuids(append(got[0], got[1]...)); len(all) != len(sent) || len(got[0])+len(got[1]) != len(sent) {
			t.Errorf("replicas got %d messages, %d distinct, want each of the %d once", len(got[0])+len(got[1]), len(all), len(sent))
		}
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) {
		ch := subscribe(t, tr, "n", "nack")
		sent := publishN(t, tr, "nack", 1)
		first := receive(t, ch, 1, (*message.Message).Nack)[0]
		again := receive(t, ch, 1)[0]
		if _, ok := sent[first.UUID]; !ok || again.UUID != first.UUID {
			t.Fatalf("got %s then %s, want the sent message twice", first.UUID, again.UUID)
		}
		if !amqp.IsMessageRedelivered(again) {
			t.Error("the second delivery is not marked as redelivered")
		}
	})

	t.Run("close ends every subscription and the publisher", func(t *testing.T) {
		tr, err := newAMQP(t.Context(), cfg, watermill.NopLogger{})
		if err != nil {
			t.Fatal(err)
		}
		subs := []<-chan *message.Message{subscribe(t, tr, "a", prefix+"fanout"), subscribe(t, tr, "b", prefix+"fanout")}
		if err := tr.close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		for i, ch := range subs {
			select {
			case _, open := <-ch:
				if open {
					t.Errorf("subscription %d delivered after close", i+1)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("subscription %d still open 5s after close", i+1)
			}
		}
		if err := tr.publisher.Publish(prefix+"fanout", message.NewMessage(watermill.NewUUID(), nil)); err == nil {
			t.Error("publishing after close succeeded")
		}
	})
}

// The service on RabbitMQ: a payment sent three times is charged and
// notified once.
func TestAMQPAppChargesOnce(t *testing.T) {
	env, _, _ := amqpAppEnv(t)
	a := startApp(t, env...)
	postThriceChargesOnce(t, a, "pay-amqp-1")
}

// Two replicas of the service share each handler's queue: copies of a
// payment reach both at once, a copy whose original is still in progress on
// the other replica is nacked and comes back, and each payment is charged
// and notified once across the two. The replicas share the store and the
// ledger, as replicas in production do; RETRY_MAX=0 sends a copy found in
// progress back to the broker at once instead of retrying it in process.
func TestAMQPReplicasChargeOnce(t *testing.T) {
	const payments, copies = 20, 3
	env, _, _ := amqpAppEnv(t)
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

	handled := func(a *running, handler string) float64 {
		return a.metric(t, "onceflow_receiver_outcomes_total", "scope", handler, "outcome", "processed") +
			a.metric(t, "onceflow_receiver_outcomes_total", "scope", handler, "outcome", "duplicate")
	}
	waitFor(t, "every copy handled", func() bool {
		for _, h := range []string{handlers.ChargePaymentHandler, handlers.NotifyCustomerHandler} {
			if handled(replicas[0], h)+handled(replicas[1], h) != payments*copies {
				return false
			}
		}
		return true
	})
	if got, want := replicas[0].summary(t), (summary{payments, payments, payments}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
	for i, a := range replicas {
		if handled(a, handlers.ChargePaymentHandler) == 0 {
			t.Errorf("replica %d handled no payment, want the work shared", i+1)
		}
	}
}

// A producer built from Watermill alone, with the durable pub/sub preset,
// feeds the service: the message contract of the README.
func TestAMQPPlainWatermillProducer(t *testing.T) {
	env, url, prefix := amqpAppEnv(t)
	a := startApp(t, env...)

	pub, err := amqp.NewPublisher(amqp.NewDurablePubSubConfig(url, nil), watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	const payments, copies = 3, 2
	publishPlainPayments(t, pub, prefix+"payments.requested", payments, copies)
	waitForCopies(t, a, payments, copies)
	if got := a.summary(t); got.Charges != payments || got.Notifications != payments {
		t.Errorf("summary = %+v, want %d charges and %d notifications", got, payments, payments)
	}
}

// A malformed message is parked in the poison exchange, and the handler
// goes on with the next one.
func TestAMQPMalformedMessageIsPoisoned(t *testing.T) {
	env, _, _ := amqpAppEnv(t)
	a := startApp(t, env...)
	if err := a.transport.publisher.Publish(handlers.TopicPaymentRequested, message.NewMessage(watermill.NewUUID(), []byte("not json"))); err != nil {
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

// A message from a producer outside Watermill, with a header that is not a
// string, is consumed rather than requeued forever.
func TestAMQPForeignHeaders(t *testing.T) {
	env, url, prefix := amqpAppEnv(t)
	a := startApp(t, env...)
	withAMQPChannel(t, url, func(ch *amqp091.Channel) error {
		return ch.PublishWithContext(t.Context(), prefix+"payments.requested", "", false, false, amqp091.Publishing{
			Body:    []byte(`{"payment_id":"pay-foreign","customer_id":"c","amount_cents":5,"currency":"EUR","requested_at":"2025-01-02T03:04:05Z"}`),
			Headers: amqp091.Table{"idempotency_key": "pay-foreign", "attempt": int32(2), "sent_by": []byte("billing")},
		})
	})
	waitFor(t, "the foreign message charged", func() bool { return a.summary(t).Charges == 1 })
}

// Start-up retries the first connection until AMQP_CONNECT_TIMEOUT, then
// fails with one line that names AMQP_URL without its password.
func TestAMQPFirstConnection(t *testing.T) {
	newApp := func(t *testing.T, ctx context.Context, url, timeout string) (time.Duration, error) {
		cfg, err := LoadConfig([]string{"TRANSPORT=amqp", "AMQP_URL=" + url, "AMQP_CONNECT_TIMEOUT=" + timeout, "HTTP_ADDR=127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a, err := New(ctx, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		if err == nil {
			_ = a.Close()
		}
		return time.Since(start), err
	}

	t.Run("gives up after the timeout", func(t *testing.T) {
		addr := closedPort(t)
		took, err := newApp(t, t.Context(), "amqp://guest:s3cret@"+addr+"/", "1s")
		if err == nil {
			t.Fatal("New succeeded with nothing listening")
		}
		msg := err.Error()
		if !strings.Contains(msg, "AMQP_URL=amqp://guest:xxxxx@"+addr+"/") || strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line naming AMQP_URL with the password masked", msg)
		}
		if took < time.Second || took > 5*time.Second {
			t.Errorf("New failed after %v, want shortly after AMQP_CONNECT_TIMEOUT=1s", took)
		}
	})

	t.Run("stops retrying when its context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		took, err := newApp(t, ctx, "amqp://guest:guest@"+closedPort(t)+"/", "1m")
		if !errors.Is(err, context.DeadlineExceeded) || took > 3*time.Second {
			t.Errorf("New returned %v after %v, want the context's error soon after 300ms", err, took)
		}
	})

	t.Run("retries until RabbitMQ answers", func(t *testing.T) {
		env, url, _ := amqpAppEnv(t)
		const refusals = 3
		proxy := startFlakyProxy(t, amqpHostPort(t, url), refusals)
		env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.addr, 1), "AMQP_CONNECT_TIMEOUT=20s")
		a := startApp(t, env...)
		if n := proxy.refused.Load(); n != refusals {
			t.Errorf("proxy refused %d connections, want %d", n, refusals)
		}
		if code := a.post(t, "/v1/payments", paymentBody("pay-through-proxy")); code != http.StatusAccepted {
			t.Fatalf("POST: status %d", code)
		}
		waitFor(t, "the payment charged", func() bool { return a.summary(t).Notifications == 1 })
	})
}

// amqpNames returns a topic prefix and a service name unique to a test, so
// that tests sharing the broker never share an exchange or a queue.
func amqpNames() (prefix, service string) {
	id := testenv.NewID()[:8]
	return "test." + id + ".", "onceflow-" + id
}

// amqpAppEnv is the environment of an App on the test RabbitMQ with its own
// names; the App's exchanges and queues are deleted when the test ends.
func amqpAppEnv(t *testing.T) (env []string, url, prefix string) {
	url = testenv.AMQP(t)
	prefix, service := amqpNames()
	deleteServiceAMQPOnCleanup(t, url, prefix, service)
	return []string{"TRANSPORT=amqp", "AMQP_URL=" + url, "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}, url, prefix
}

// deleteServiceAMQPOnCleanup deletes, when t ends, the exchanges and queues
// a service with this TOPIC_PREFIX and SERVICE_NAME declares: they are
// durable and would outlive the test on the shared broker.
func deleteServiceAMQPOnCleanup(t *testing.T, url, prefix, service string) {
	cfg := Config{TopicPrefix: prefix, ServiceName: service}
	routes := append(handlers.NewMessageHandlers(memory.NewLedger(), nil).Routes(),
		handlers.Route{Name: poisonLogHandler, Consumes: PoisonTopic})
	var exchanges, queues []string
	for _, r := range routes {
		exchanges = append(exchanges, prefix+r.Consumes)
		queues = append(queues, prefix+r.Consumes+"_"+consumerGroup(cfg, r.Name))
	}
	deleteAMQPOnCleanup(t, url, exchanges, queues)
}

// subscribe subscribes handler's subscriber of tr to topic until the test
// ends.
func subscribe(t *testing.T, tr transport, handler, topic string) <-chan *message.Message {
	t.Helper()
	s, err := tr.subscriber(handler)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// publishN publishes n messages with JSON payloads and idempotency keys, and
// returns them by UUID.
func publishN(t *testing.T, tr transport, topic string, n int) map[string]*message.Message {
	t.Helper()
	sent := make(map[string]*message.Message, n)
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, `{"n":%d}`, i))
		m.Metadata.Set("idempotency_key", fmt.Sprintf("key-%d", i))
		sent[m.UUID] = m
		msgs = append(msgs, m)
	}
	if err := tr.publisher.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// receive takes n messages from ch, settling each with settle (Ack unless
// given), and fails the test if they do not come within 10 seconds.
func receive(t *testing.T, ch <-chan *message.Message, n int, settle ...func(*message.Message) bool) []*message.Message {
	t.Helper()
	done := (*message.Message).Ack
	if len(settle) > 0 {
		done = settle[0]
	}
	timeout := time.After(10 * time.Second)
	var got []*message.Message
	for len(got) < n {
		select {
		case m := <-ch:
			done(m)
			got = append(got, m)
		case <-timeout:
			t.Fatalf("received %d of %d messages in 10s", len(got), n)
		}
	}
	return got
}

func uuids(msgs []*message.Message) map[string]bool {
	set := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		set[m.UUID] = true
	}
	return set
}

// waitConsumers waits until queue has n consumers, so that messages
// published next are spread over all of them.
func waitConsumers(t *testing.T, url, queue string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d consumers on %s", n, queue), func() bool {
		var q amqp091.Queue
		withAMQPChannel(t, url, func(ch *amqp091.Channel) (err error) {
			q, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			return err
		})
		return q.Consumers >= n
	})
}

// withAMQPChannel runs f on a channel of a connection of its own.
func withAMQPChannel(t *testing.T, url string, f func(*amqp091.Channel) error) {
	t.Helper()
	conn, err := amqp091.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := f(ch); err != nil {
		t.Fatal(err)
	}
}

// deleteAMQPOnCleanup deletes the queues and exchanges when the test ends,
// after whatever cleanup is registered later (the App or transport using
// them).
func deleteAMQPOnCleanup(t *testing.T, url string, exchanges, queues []string) {
	t.Cleanup(func() {
		conn, err := amqp091.Dial(url)
		if err != nil {
			t.Logf("deleting test queues: %v", err)
			return
		}
		defer conn.Close()
		for _, q := range queues {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(q, false, false, false)
				_ = ch.Close()
			}
		}
		for _, e := range exchanges {
			if ch, err := conn.Channel(); err == nil {
				_ = ch.ExchangeDelete(e, false, false)
				_ = ch.Close()
			}
		}
	})
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func amqpHostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := amqp091.ParseURI(raw)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(u.Host, fmt.Sprint(u.Port))
}
