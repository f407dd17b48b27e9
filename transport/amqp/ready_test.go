package amqp

import (
	"net/url"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// Readiness checks ride a connection that lasts: many checks open at most
// one connection to the broker (each used to dial its own), and once the
// broker drops that connection the next check dials again and answers.
func TestReadinessKeepsItsConnection(t *testing.T) {
	u, err := url.Parse(brokerenv.AMQP(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, u.Host, nil)
	u.Host = proxy.Addr()
	prefix, service := testenv.Names()
	cfg := Config{URL: u.String(), ConnectTimeout: 5 * time.Second, TopicPrefix: prefix, ServiceName: service}
	transporttest.CheckReadinessConnections(t, newTestTransport(t, cfg), proxy)
}
