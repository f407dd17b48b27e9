package app

import (
	"os"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
)

// TestMain stops the services the tests started in process (the Kafka
// broker, the Redis Cluster) once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopKafka()
	testenv.StopRedisCluster()
	os.Exit(code)
}
