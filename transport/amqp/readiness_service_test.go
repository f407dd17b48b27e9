//go:build !race

// The race detector is off for this file: when RabbitMQ comes back,
// watermill-amqp's reconnect swaps ConnectionWrapper.connected without a
// lock (ThreeDotsLabs/watermill#693), and -race reports it inside that
// library whenever the reconnected transport is used or closed. Under
// `make test` (-race) the same readiness is asserted against the built
// binary by the fault suite's broker_outage/amqp row (tools/internal/chaos).

package amqp_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// /readyz reports the broker: not ready while RabbitMQ cannot be reached,
// ready again once it can, without a restart.
func TestReadinessFollowsTheBroker(t *testing.T) {
	env, proxy := behindSwitch(t)
	s := apptest.Start(t, testdomain.Domain(), env...)

	var body struct{ Checks map[string]string }
	if code := s.Get(t, "/readyz", &body); code != http.StatusOK || body.Checks["broker"] != "ok" {
		t.Fatalf("before the outage: /readyz %d %v, want 200 with broker ok", code, body.Checks)
	}
	proxy.cutAll()
	testenv.WaitFor(t, flowtest.Wait, "/readyz not ready during the outage", func() bool {
		return s.Get(t, "/readyz", &body) == http.StatusServiceUnavailable && body.Checks["broker"] == "unreachable"
	})
	proxy.restore()
	testenv.WaitFor(t, flowtest.Wait, "/readyz ready after the outage", func() bool { return s.Get(t, "/readyz", nil) == http.StatusOK })
	// That the service then works again without a restart is shown by the
	// fault suite's broker-outage rows (tools/internal/chaos), against its
	// built binary.
}

// readinessInterval is how often /readyz checks the store and the broker
// at most, answering the probes in between with its last verdict.
const readinessInterval = time.Second

// A storm of probes costs the broker no connections: /readyz checks at
// most once a second, on a connection it keeps.
func TestReadinessProbeStormOpensNoConnections(t *testing.T) {
	env, proxy := behindSwitch(t)
	s := apptest.Start(t, testdomain.Domain(), env...)

	before := proxy.Accepted()
	probes := 0
	for end := time.Now().Add(2*readinessInterval + readinessInterval/2); time.Now().Before(end); probes++ {
		if code := s.Get(t, "/readyz", nil); code != http.StatusOK {
			t.Fatalf("probe %d: /readyz %d, want 200", probes+1, code)
		}
	}
	if opened := proxy.Accepted() - before; opened > 1 {
		t.Errorf("%d probes over %v opened %d connections to RabbitMQ, want at most 1", probes, 2*readinessInterval+readinessInterval/2, opened)
	}
}
