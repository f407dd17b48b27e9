package app

import (
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/domain"
)

// A route may not take the name of a handler the service registers itself:
// the router would refuse the second registration only when it runs.
func TestCheckRoutesRefusesTheServicesOwnNames(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	for _, name := range []string{poisonLogHandler, outboxHandler} {
		err := checkRoutes(domain.Routes{{Name: name, Consumes: "in", Consume: consume}}, time.Minute)
		if err == nil || !strings.Contains(err.Error(), "the service's own handler") {
			t.Errorf("checkRoutes(route %q) = %v, want it refused", name, err)
		}
	}
	if err := checkRoutes(paymentRoutes(), time.Minute); err != nil {
		t.Errorf("checkRoutes(the payments routes) = %v", err)
	}
}

// A route's own timeout, like HANDLER_TIMEOUT, must end before the lease:
// otherwise a claim could expire while its handler still runs.
func TestCheckRoutesRefusesATimeoutTheLeaseDoesNotOutlive(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	r := domain.Route{Name: "slow", Consumes: "in", Consume: consume, Timeout: time.Minute}
	if err := checkRoutes(domain.Routes{r}, time.Minute); err == nil || !strings.Contains(err.Error(), "must be shorter than DEDUP_LEASE=1m0s") {
		t.Errorf("checkRoutes(timeout 1m, lease 1m) = %v, want it refused", err)
	}
	if err := checkRoutes(domain.Routes{r}, 2*time.Minute); err != nil {
		t.Errorf("checkRoutes(timeout 1m, lease 2m) = %v", err)
	}
}
