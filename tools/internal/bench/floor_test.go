package bench

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/stores/memory"
)

// The floor is a deduplicating middleware, not a pass-through: its figure
// bounds the receiver's only if it makes the same claims. A failed handler
// frees the key for the redelivery, and a completed key runs no handler.
func TestFloorRunsAHandlerOncePerKey(t *testing.T) {
	s := memory.New(memory.Config{})
	t.Cleanup(func() { _ = s.Close() })
	failure := errors.New("handler failed")
	runs := 0
	h := FloorMiddleware(s)(func(*message.Message) ([]*message.Message, error) {
		runs++
		if runs == 1 {
			return nil, failure
		}
		return nil, nil
	})
	msg := message.NewMessage("uuid-1", []byte("payload"))
	msg.Metadata.Set(consume.MetadataKey, "key-1")

	if _, err := h(msg); !errors.Is(err, failure) {
		t.Fatalf("first delivery: err %v, want the handler's", err)
	}
	for delivery := 2; delivery <= 3; delivery++ {
		if _, err := h(msg); err != nil {
			t.Fatalf("delivery %d: %v", delivery, err)
		}
	}
	if runs != 2 {
		t.Fatalf("handler ran %d times in 3 deliveries, want 2: once failing, once completing", runs)
	}
	if n := s.Len(); n != 1 {
		t.Fatalf("store holds %d records, want the one completed", n)
	}
}
