package app

import (
	"net/http"
	"strings"
	"testing"
)

// /readyz reports the broker: not ready while the connection to RabbitMQ
// is cut, ready again once it reconnects by itself, without a restart.
func TestReadinessFollowsTheBroker(t *testing.T) {
	env, url, _ := amqpAppEnv(t)
	proxy := startSwitchProxy(t, amqpHostPort(t, url))
	env = append(env, "AMQP_URL="+strings.Replace(url, amqpHostPort(t, url), proxy.addr, 1))
	a := startApp(t, env...)

	var body struct{ Checks map[string]string }
	if code := a.get(t, "/readyz", &body); code != http.StatusOK || body.Checks["broker"] != "ok" {
		t.Fatalf("before the outage: /readyz %d %v, want 200 with broker ok", code, body.Checks)
	}
	proxy.cutFirst()
	waitFor(t, "/readyz not ready during the outage", func() bool {
		return a.get(t, "/readyz", &body) == http.StatusServiceUnavailable && body.Checks["broker"] == "unreachable"
	})
	proxy.restore()
	waitFor(t, "/readyz ready after the outage", func() bool { return a.get(t, "/readyz", nil) == http.StatusOK })
	if code := a.post(t, "/v1/payments", paymentBody("pay-after-outage")); code != http.StatusAccepted {
		t.Fatalf("POST after the outage: status %d", code)
	}
	waitFor(t, "the payment after the outage charged", func() bool { return a.summary(t).Charges == 1 })
}
