package app

import (
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/handlers"
)

// A route may not take the name of a handler the service registers itself:
// the router would refuse the second registration only when it runs.
func TestCheckRoutesRefusesTheServicesOwnNames(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	for _, name := range []string{poisonLogHandler, outboxHandler} {
		err := checkRoutes(handlers.Routes{{Name: name, Consumes: "in", Consume: consume}})
		if err == nil || !strings.Contains(err.Error(), "the service's own handler") {
			t.Errorf("checkRoutes(route %q) = %v, want it refused", name, err)
		}
	}
	if err := checkRoutes(paymentRoutes()); err != nil {
		t.Errorf("checkRoutes(the payments routes) = %v", err)
	}
}
