package app

import (
	"os"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// TestMain stops the services the tests started in process (the Kafka
// broker, the Redis Cluster) once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	brokerenv.StopKafka()
	testenv.StopRedisCluster()
	os.Exit(code)
}
