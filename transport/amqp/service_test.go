package amqp_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// The service on RabbitMQ: a request sent three times is charged, noticed
// and receipted once.
func TestAMQPAppChargesOnce(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.PostThriceChargesOnce(t, s, "req-amqp-1")
}

// Two replicas of the service share each route's queue: copies of a
// request reach both at once, a copy whose original is still in progress
// on the other replica is nacked and comes back, and each request is
// charged, noticed and receipted once across the two. The replicas share
// the store and the ledger, as replicas in production do; RETRY_MAX=0
// sends a copy found in progress back to the broker at once instead of
// retrying it in process.
func TestAMQPReplicasChargeOnce(t *testing.T) {
	flowtest.ReplicasChargeOnce(t, apptest.Start, serviceEnv(t), 3, "processed", "duplicate")
}

// A producer built from Watermill alone, with the durable pub/sub preset,
// feeds the service: the message contract of docs/brokers.md.
func TestAMQPPlainWatermillProducer(t *testing.T) {
	env := serviceEnv(t)
	s := apptest.Start(t, testdomain.Domain(), env...)

	pub, err := amqp.NewPublisher(amqp.NewDurablePubSubConfig(testenv.Setting(env, "AMQP_URL"), nil), watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	flowtest.PlainProducerChargesOnce(t, s, pub, testenv.Setting(env, "TOPIC_PREFIX")+testdomain.TopicRequested)
}

// A malformed message is parked in the poison exchange, and the route goes
// on with the next one.
func TestAMQPMalformedMessageIsPoisoned(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.MalformedIsPoisoned(t, s, s.Producer(t), "not json")
}

// A message from a producer outside Watermill, with a header that is not a
// string, is consumed rather than requeued forever.
func TestAMQPForeignHeaders(t *testing.T) {
	env := serviceEnv(t)
	s := apptest.Start(t, testdomain.Domain(), env...)
	brokerenv.AMQPChannel(t, testenv.Setting(env, "AMQP_URL"), func(ch *amqp091.Channel) error {
		return ch.PublishWithContext(t.Context(), testenv.Setting(env, "TOPIC_PREFIX")+testdomain.TopicRequested, "", false, false, amqp091.Publishing{
			Body:    []byte(`{"id":"foreign","amount":5}`),
			Headers: amqp091.Table{"idempotency_key": "foreign", "attempt": int32(2), "sent_by": []byte("billing")},
		})
	})
	testenv.WaitFor(t, flowtest.Wait, "the foreign message charged", func() bool { return flowtest.Tally(t, s).Charges.Rows == 1 })
}

// Start-up retries the first connection until AMQP_CONNECT_TIMEOUT, then
// fails with one line that names AMQP_URL without its password.
func TestAMQPFirstConnection(t *testing.T) {
	newApp := func(t *testing.T, ctx context.Context, url, timeout string) (time.Duration, error) {
		environ := []string{"TRANSPORT=amqp", "AMQP_URL=" + url, "AMQP_CONNECT_TIMEOUT=" + timeout, "HTTP_ADDR=127.0.0.1:0", "ALLOW_ANONYMOUS=true"}
		cfg, err := app.LoadConfig(environ)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a, err := app.New(ctx, cfg, testdomain.Domain().WithEnviron(environ), slog.New(slog.NewTextHandler(t.Output(), nil)))
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
		env := serviceEnv(t)
		const refusals = 3
		proxy := startFlakyProxy(t, rabbitMQAddr(t, env), refusals)
		env = append(viaProxy(t, env, proxy.Proxy), "AMQP_CONNECT_TIMEOUT=20s")
		s := apptest.Start(t, testdomain.Domain(), env...)
		if n := proxy.refused.Load(); n != refusals {
			t.Errorf("proxy refused %d connections, want %d", n, refusals)
		}
		flowtest.PostOK(t, s, "req-through-proxy")
		testenv.WaitFor(t, flowtest.Wait, "the request charged and noticed", func() bool { return flowtest.Tally(t, s).Notices.Rows == 1 })
	})
}
