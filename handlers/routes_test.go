package handlers_test

import (
	"slices"
	"testing"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
)

// The domain's own routes are what the application wires: they must pass
// the checks it runs at start-up.
func TestPaymentRoutesAreValid(t *testing.T) {
	t.Parallel()
	routes := handlers.NewMessageHandlers(memory.NewLedger(), nil, nil).Routes()
	if err := routes.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := routes.Outputs()[handlers.ChargePaymentHandler]; got != handlers.TopicPaymentCharged {
		t.Errorf("output of %s = %q, want %q", handlers.ChargePaymentHandler, got, handlers.TopicPaymentCharged)
	}
	for _, topic := range []string{handlers.TopicPaymentRequested, handlers.TopicPaymentCharged} {
		if !slices.Contains(routes.Topics(), topic) {
			t.Errorf("Topics() = %v, want it to hold %s", routes.Topics(), topic)
		}
	}
}
