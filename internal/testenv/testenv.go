// Package testenv gives integration tests the real services they run
// against: PostgreSQL, Redis, a Redis Cluster, RabbitMQ, NATS and Kafka (an
// in-process kfake broker unless TEST_KAFKA_BROKERS names a real one).
//
// Addresses come from TEST_* environment variables with loopback defaults
// (the ports docker-compose.yml publishes). When a service cannot be reached
// the test is skipped with one line naming the service and `make up` — unless
// REQUIRE_SERVICES=1 (set by CI), in which case the test fails: CI never
// passes by skipping integration tests.
package testenv

import (
	"os"
	"testing"
)

// Required reports whether unreachable services fail tests instead of
// skipping them (REQUIRE_SERVICES=1).
func Required() bool { return os.Getenv("REQUIRE_SERVICES") == "1" }

// Unreachable fails or skips t because service at addr could not be used.
// The skip line tells how to provide it: `make up`, or for services the
// tests start themselves, the binary to install.
func Unreachable(t testing.TB, service, addr string, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s unreachable at %s: %v (REQUIRE_SERVICES=1)", service, addr, err)
	}
	t.Skipf("%s unreachable at %s: %v; %s, or set REQUIRE_SERVICES=1 to fail instead", service, addr, err, howToStart(service))
}

func howToStart(service string) string {
	switch service {
	case redisClusterService:
		return "install redis-server and redis-cli (the tests start the cluster) or set " + RedisClusterAddrsEnv
	case natsServerService:
		return "install nats-server (the tests start their own)"
	case postgresServerService:
		return "install PostgreSQL's server (the tests start their own)"
	case kafkaService:
		return "set " + KafkaBrokersEnv + " to a running cluster (`make up` starts one)"
	}
	return "start it with `make up`"
}

// Integration marks t as an integration test: it is skipped under
// `go test -short`, so unit tests run with nothing installed.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
}

// Getenv returns the environment variable key, or def when it is unset or
// empty.
func Getenv(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}
