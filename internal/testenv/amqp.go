package testenv

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DefaultAMQPURL is the RabbitMQ tests use unless TEST_AMQP_URL is set.
const DefaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

// AMQPURL returns TEST_AMQP_URL or DefaultAMQPURL.
func AMQPURL() string { return Getenv("TEST_AMQP_URL", DefaultAMQPURL) }

// AMQP returns the URL of the RabbitMQ tests use, after checking that it
// accepts a connection. Tests must scope their exchanges and queues (a
// unique TOPIC_PREFIX and SERVICE_NAME): the broker is shared.
func AMQP(t testing.TB) string {
	t.Helper()
	Integration(t)
	u := AMQPURL()
	conn, err := amqp.DialConfig(u, amqp.Config{Locale: "en_US", Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		Unreachable(t, "RabbitMQ", redactURL(u), err)
	}
	_ = conn.Close()
	return u
}
