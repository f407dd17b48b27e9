// Package testenv gives integration tests the real services they run
// against (PostgreSQL, Redis, a Redis Cluster) and what every test needs
// beside them: waits, unique names, free addresses, processes of a test's
// own, HTTP and metrics helpers, TLS files. It imports no broker client:
// the brokers' helpers are in package brokerenv below it.
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
	UnreachableHow(t, service, addr, err, howToStart(service))
}

// UnreachableHow is Unreachable with the skip line's hint on how to
// provide service given by the caller: the binary to install, say, for a
// server the tests start themselves.
func UnreachableHow(t testing.TB, service, addr string, err error, how string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s unreachable at %s: %v (REQUIRE_SERVICES=1)", service, addr, err)
	}
	t.Skipf("%s unreachable at %s: %v; %s, or set REQUIRE_SERVICES=1 to fail instead", service, addr, err, how)
}

func howToStart(service string) string {
	switch service {
	case redisClusterService:
		return "install redis-server and redis-cli (the tests start the cluster) or set " + RedisClusterAddrsEnv
	case postgresServerService:
		return "install PostgreSQL's server (the tests start their own)"
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
