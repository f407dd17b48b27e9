package consume_test

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/unguarded"
	"github.com/onceflow/onceflow/middleware/consume"
)

// TestTheReceiverThatStandsForNoneInstallsNothing checks the bench's
// switch: the middleware of unguarded.Receiver runs the handler for every
// delivery, a copy of the same key included, and never calls its store.
func TestTheReceiverThatStandsForNoneInstallsNothing(t *testing.T) {
	runs := 0
	h := consume.Middleware(unguarded.Receiver())(func(*message.Message) ([]*message.Message, error) {
		runs++
		return nil, nil
	})
	for range 2 {
		msg := message.NewMessage("same-uuid", []byte("payload"))
		msg.Metadata.Set(consume.MetadataKey, "same-key")
		if _, err := h(msg); err != nil {
			t.Fatalf("handler: %v", err)
		}
	}
	if runs != 2 {
		t.Errorf("the handler ran %d times for two deliveries of one key, want 2", runs)
	}
}
