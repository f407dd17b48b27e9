package transporttest_test

import (
	"testing"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// Watermill's suite runs the transports at the service's default in-flight
// count, HANDLER_CONCURRENCY's default.
func TestSuiteInFlightIsTheService(t *testing.T) {
	cfg, err := app.LoadConfig([]string{"ALLOW_ANONYMOUS=true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HandlerConcurrency != transporttest.DefaultInFlight {
		t.Errorf("the suite runs %d in flight, HANDLER_CONCURRENCY defaults to %d", transporttest.DefaultInFlight, cfg.HandlerConcurrency)
	}
}

// The tests key their messages by the metadata entry the receiver takes
// the idempotency key from, which the service passes to the transports.
func TestKeyMetadataIsTheReceivers(t *testing.T) {
	if transporttest.KeyMetadata != consume.MetadataKey {
		t.Errorf("the tests key messages by %q, the receiver by %q", transporttest.KeyMetadata, consume.MetadataKey)
	}
}
