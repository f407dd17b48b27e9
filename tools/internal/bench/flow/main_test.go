package flow

import (
	"os"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// TestMain stops the Kafka broker the tests started in process once every
// test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	brokerenv.StopKafka()
	os.Exit(code)
}
