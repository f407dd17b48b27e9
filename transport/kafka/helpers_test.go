package kafka

import (
	"testing"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// TestMain stops the Kafka broker the tests started in process once every
// test has run.
func TestMain(m *testing.M) { transporttest.Main(m, brokerenv.StopKafka) }

// The service's topics, as the tests use them.
const (
	topicRequested = transporttest.TopicRequested
	topicCharged   = transporttest.TopicCharged
	topicPoison    = transporttest.TopicPoison
)

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *broker.Transport {
	t.Helper()
	return transporttest.Open(t, New, cfg)
}
