package kafka

import (
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// Readiness checks ride a connection that lasts: many checks open at most
// one connection to the broker (each used to dial its own), and once the
// broker drops that connection the next check dials again and answers.
func TestReadinessKeepsItsConnection(t *testing.T) {
	brokers := brokerenv.Kafka(t)
	proxy := testenv.StartProxy(t, brokers[0], nil)
	prefix, service := testenv.Names()
	cfg := Config{Brokers: []string{proxy.Addr()}, TopicPrefix: prefix, ServiceName: service}
	transporttest.CheckReadinessConnections(t, newTestTransport(t, cfg), proxy)
}
