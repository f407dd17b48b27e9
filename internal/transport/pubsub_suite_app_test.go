package transport_test

import (
	"testing"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/internal/transport"
)

// Watermill's suite runs the transports at the service's default in-flight
// count, HANDLER_CONCURRENCY's default.
func TestSuiteInFlightIsTheService(t *testing.T) {
	cfg, err := app.LoadConfig([]string{"ALLOW_ANONYMOUS=true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HandlerConcurrency != transport.SuiteDefaultInFlight {
		t.Errorf("the suite runs %d in flight, HANDLER_CONCURRENCY defaults to %d", transport.SuiteDefaultInFlight, cfg.HandlerConcurrency)
	}
}
