package nats

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// TestMain runs the tests with parallel tests enough for their waits.
func TestMain(m *testing.M) { transporttest.Main(m) }

// Watermill's own Pub/Sub suite on the transport as the service builds it
// (see transporttest.RunPubSubSuite).
func TestPubSubSuite(t *testing.T) {
	transporttest.RunPubSubSuite(t, transporttest.Suite{
		// A push consumer's server may push to a subscription as it ends
		// — the backlog to one that ends the moment it began, or a
		// message published just after the last one ended, before the
		// server saw the interest go — and what it pushed then comes back
		// after the ack deadline (see New): 30 s by default, past the
		// suite's 15 s reads, so the suite's is 3 s.
		Open: func(t *testing.T) transporttest.Opener {
			cfg := testConfig(t, brokerenv.NATS(t))
			cfg.AckDeadline = 3 * time.Second
			return transporttest.OpenerOf(New, cfg)
		},
		// As watermill-nats's JetStream runs, but for three things. Order:
		// a subscriber holding n messages has them out at once, in no
		// order between them. No RequireSingleInstance, which
		// watermill-nats sets to get by: replicas sharing a handler's
		// durable consumer are what the service runs. And delivery at
		// least once, not exactly once: a message the server pushed as a
		// subscription ended comes again after the ack deadline, and an
		// ack lost with its connection comes again too; the receiver
		// makes the handler's effects once.
		Features: func(inFlight int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true,
				GuaranteedOrder: inFlight == 1, GuaranteedOrderWithSingleSubscriber: true}
		},
	})
}
