package kafka

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// Watermill's own Pub/Sub suite on the transport as the service builds it
// (see transporttest.RunPubSubSuite).
func TestPubSubSuite(t *testing.T) {
	transporttest.RunPubSubSuite(t, transporttest.Suite{
		Open: func(t *testing.T) transporttest.Opener {
			prefix, service := testenv.Names()
			return transporttest.OpenerOf(New, Config{Brokers: brokerenv.Kafka(t), TopicPrefix: prefix, ServiceName: service,
				KeyMetadata: transporttest.KeyMetadata})
		},
		// As watermill-kafka's consumer group run. GuaranteedOrder stays
		// false: the transport keeps the order of one Kafka key, its
		// idempotency key or else the message UUID (marshaler), and the
		// suite's messages carry no idempotency key.
		// TestKafkaSubscriberKeepsKeyOrder checks a key's order.
		Features: func(int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true}
		},
	})
}
