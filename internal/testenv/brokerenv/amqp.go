package brokerenv

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/internal/testenv"
)

// DefaultAMQPURL is the RabbitMQ tests use unless TEST_AMQP_URL is set.
const DefaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

// AMQPURL returns TEST_AMQP_URL or DefaultAMQPURL.
func AMQPURL() string { return testenv.Getenv("TEST_AMQP_URL", DefaultAMQPURL) }

// AMQP returns the URL of the RabbitMQ tests use, after checking that it
// accepts a connection. Tests must scope their exchanges and queues (a
// unique TOPIC_PREFIX and SERVICE_NAME): the broker is shared.
func AMQP(t testing.TB) string {
	t.Helper()
	testenv.Integration(t)
	u := AMQPURL()
	conn, err := amqp.DialConfig(u, amqp.Config{Locale: "en_US", Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		testenv.Unreachable(t, "RabbitMQ", testenv.RedactURL(u), err)
	}
	_ = conn.Close()
	return u
}

// AMQPChannel runs f on a channel of a connection of its own to the
// RabbitMQ at url, failing the test on any error.
func AMQPChannel(t testing.TB, url string, f func(*amqp.Channel) error) {
	t.Helper()
	conn, err := amqp.Dial(url)
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

// DeleteAMQPOnCleanup deletes the queues and exchanges when the test ends,
// after whatever cleanup is registered later (the service or transport
// using them): they are durable and would outlive the test on the shared
// broker.
func DeleteAMQPOnCleanup(t testing.TB, url string, exchanges, queues []string) {
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
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
