//go:build !race

// The race detector is off for this file: when RabbitMQ comes back,
// watermill-amqp's reconnect swaps ConnectionWrapper.connected without a
// lock (ThreeDotsLabs/watermill#693), and -race reports it inside that
// library whenever the reconnected transport is used or closed. Under
// `make test` (-race) the same readiness is asserted against the built
// binary by the fault suite's broker_outage/amqp row (tools/internal/chaos).

package app

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// /readyz reports the broker: not ready while RabbitMQ cannot be reached,
// ready again once it can, without a restart.
func TestReadinessFollowsTheBroker(t *testing.T) {
	env, url, _ := amqpAppEnv(t)
	proxy := startSwitchProxy(t, amqpHostPort(t, url))
	env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.Addr(), 1))
	a := startApp(t, env...)

	var body struct{ Checks map[string]string }
	if code := a.get(t, "/readyz", &body); code != http.StatusOK || body.Checks["broker"] != "ok" {
		t.Fatalf("before the outage: /readyz %d %v, want 200 with broker ok", code, body.Checks)
	}
	proxy.cutAll()
	waitFor(t, "/readyz not ready during the outage", func() bool {
		return a.get(t, "/readyz", &body) == http.StatusServiceUnavailable && body.Checks["broker"] == "unreachable"
	})
	proxy.restore()
	waitFor(t, "/readyz ready after the outage", func() bool { return a.get(t, "/readyz", nil) == http.StatusOK })
	// That the service then works again without a restart is shown by the
	// broker-outage rows of the fault suite (tools/internal/chaos), against
	// its built binary.
}

// A storm of probes costs the broker no connections: /readyz checks at
// most once a second, on a connection it keeps. Each probe used to dial
// RabbitMQ.
func TestReadinessProbeStormOpensNoConnections(t *testing.T) {
	env, url, _ := amqpAppEnv(t)
	proxy := startSwitchProxy(t, amqpHostPort(t, url))
	env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.Addr(), 1))
	a := startApp(t, env...)

	before := proxy.Accepted()
	probes := 0
	for end := time.Now().Add(2*readinessTTL + readinessTTL/2); time.Now().Before(end); probes++ {
		if code := a.get(t, "/readyz", nil); code != http.StatusOK {
			t.Fatalf("probe %d: /readyz %d, want 200", probes+1, code)
		}
	}
	if opened := proxy.Accepted() - before; opened > 1 {
		t.Errorf("%d probes over %v opened %d connections to RabbitMQ, want at most 1", probes, 2*readinessTTL+readinessTTL/2, opened)
	}
}
