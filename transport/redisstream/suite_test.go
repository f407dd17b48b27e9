package redisstream

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// TestMain runs the tests with parallel tests enough for their waits.
func TestMain(m *testing.M) { transporttest.Main(m) }

// Watermill's own Pub/Sub suite on the transport as the service builds it
// (see transporttest.RunPubSubSuite).
func TestPubSubSuite(t *testing.T) {
	transporttest.RunPubSubSuite(t, transporttest.Suite{
		Open: func(t *testing.T) transporttest.Opener {
			cfg, _ := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
			return transporttest.OpenerOf(New, cfg)
		},
		// As watermill-redisstream's run.
		Features: func(int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true, GuaranteedOrderWithSingleSubscriber: true}
		},
	})
}
