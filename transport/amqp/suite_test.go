package amqp

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// TestMain runs the tests with parallel tests enough for their waits.
func TestMain(m *testing.M) { transporttest.Main(m) }

// Watermill's own Pub/Sub suite on the transport as the service builds it
// (see transporttest.RunPubSubSuite).
func TestPubSubSuite(t *testing.T) {
	transporttest.RunPubSubSuite(t, transporttest.Suite{
		Open: func(t *testing.T) transporttest.Opener {
			prefix, service := testenv.Names()
			return transporttest.OpenerOf(New, Config{URL: brokerenv.AMQP(t), ConnectTimeout: 5 * time.Second,
				TopicPrefix: prefix, ServiceName: service})
		},
		// As watermill-amqp's durable pub/sub run, but for order: a
		// subscriber holding n messages has them out at once, one per
		// consumer of the queue, in no order between them; with one it
		// keeps RabbitMQ's.
		Features: func(inFlight int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true,
				GuaranteedOrder: inFlight == 1, GuaranteedOrderWithSingleSubscriber: true}
		},
	})
}
