package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

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
	env, _, _ := amqpAppEnv(t)
	replicasChargeOnce(t, env, 3, "processed", "duplicate")
}

// A producer built from Watermill alone, with the durable pub/sub preset,
// feeds the service: the message contract of docs/brokers.md.
func TestAMQPPlainWatermillProducer(t *testing.T) {
	env, url, prefix := amqpAppEnv(t)
	a := startApp(t, env...)

	pub, err := amqp.NewPublisher(amqp.NewDurablePubSubConfig(url, nil), watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	plainProducerChargesOnce(t, a, pub, prefix+"payments.requested")
}

// A malformed message is parked in the poison exchange, and the handler
// goes on with the next one.
func TestAMQPMalformedMessageIsPoisoned(t *testing.T) {
	env, _, _ := amqpAppEnv(t)
	a := startApp(t, env...)
	malformedIsPoisoned(t, a, "not json")
}

// A message from a producer outside Watermill, with a header that is not a
// string, is consumed rather than requeued forever.
func TestAMQPForeignHeaders(t *testing.T) {
	env, url, prefix := amqpAppEnv(t)
	a := startApp(t, env...)
	brokerenv.AMQPChannel(t, url, func(ch *amqp091.Channel) error {
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
		cfg, err := LoadConfig([]string{"TRANSPORT=amqp", "AMQP_URL=" + url, "AMQP_CONNECT_TIMEOUT=" + timeout, "HTTP_ADDR=127.0.0.1:0", "ALLOW_ANONYMOUS=true"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a, err := New(ctx, cfg, payments.Domain(), slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		if err == nil {
			_ = a.Close()
		}
		return time.Since(start), err
	}

	t.Run("gives up after the timeout", func(t *testing.T) {
		addr := testenv.ClosedAddr(t)
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
		took, err := newApp(t, ctx, "amqp://guest:guest@"+testenv.ClosedAddr(t)+"/", "1m")
		if !errors.Is(err, context.DeadlineExceeded) || took > 3*time.Second {
			t.Errorf("New returned %v after %v, want the context's error soon after 300ms", err, took)
		}
	})

	t.Run("retries until RabbitMQ answers", func(t *testing.T) {
		env, url, _ := amqpAppEnv(t)
		const refusals = 3
		proxy := startFlakyProxy(t, amqpHostPort(t, url), refusals)
		env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.Addr(), 1), "AMQP_CONNECT_TIMEOUT=20s")
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

// amqpAppEnv is the environment of an App on the test RabbitMQ with its own
// names; the App's exchanges and queues are deleted when the test ends.
func amqpAppEnv(t *testing.T) (env []string, url, prefix string) {
	url = brokerenv.AMQP(t)
	prefix, service := testenv.Names()
	deleteServiceAMQPOnCleanup(t, url, prefix, service)
	return []string{"TRANSPORT=amqp", "AMQP_URL=" + url, "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}, url, prefix
}

// deleteServiceAMQPOnCleanup deletes, when t ends, the exchanges and queues
// a service with this TOPIC_PREFIX and SERVICE_NAME declares: they are
// durable and would outlive the test on the shared broker.
func deleteServiceAMQPOnCleanup(t *testing.T, url, prefix, service string) {
	exchanges, queues := Config{TopicPrefix: prefix, ServiceName: service}.AMQPDeclared(paymentRoutes())
	brokerenv.DeleteAMQPOnCleanup(t, url, exchanges, queues)
}

func amqpHostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := amqp091.ParseURI(raw)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(u.Host, fmt.Sprint(u.Port))
}
