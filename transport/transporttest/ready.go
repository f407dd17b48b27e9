package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/broker"
)

// CheckReadinessConnections runs tr's readiness check many times and
// requires proxy, in front of the broker, to see at most one new
// connection; then cuts that connection, as a broker closing it would,
// and requires the next check to pass on a new one.
func CheckReadinessConnections(t *testing.T, tr *broker.Transport, proxy *testenv.Proxy) {
	t.Helper()
	ready := tr.Readiness()
	check := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		return ready(ctx)
	}
	const checks = 20
	before := proxy.Accepted()
	for i := range checks {
		if err := check(); err != nil {
			t.Fatalf("check %d: %v", i+1, err)
		}
	}
	if opened := proxy.Accepted() - before; opened > 1 {
		t.Errorf("%d readiness checks opened %d connections to the broker, want at most 1", checks, opened)
	}
	// Cut the checks' connection, not the transport's own: watermill-amqp's
	// reconnect races with Close (ThreeDotsLabs/watermill#693).
	cut := proxy.Accepted()
	for i := before; i < cut; i++ {
		proxy.Cut(int(i))
	}
	if err := check(); err != nil || proxy.Accepted() != cut+1 {
		t.Errorf("the first check after the broker dropped the connection: %v, %d new connections; want ready on one new one",
			err, proxy.Accepted()-cut)
	}
}
