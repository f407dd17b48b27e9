//go:build !race

package middleware

import (
	"log/slog"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/stores/memory"
)

// allocBudget is the most allocations the receiver may add to a unique
// message on the memory store, the store's own included (issue 10's
// target). The race detector allocates on its own, hence the build tag.
const allocBudget = 10

func TestReceiverAllocationBudget(t *testing.T) {
	s := memory.New(memory.Config{})
	t.Cleanup(func() { _ = s.Close() })
	r, err := NewReceiver(Config{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Middleware()(func(*message.Message) ([]*message.Message, error) { return nil, nil })
	ctx := handlerContext(t)

	const runs = 1000
	msgs := make([]*message.Message, runs+1) // AllocsPerRun warms up once
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), benchPayload(i))
		msgs[i].SetContext(ctx)
	}
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		if _, err := h(msgs[next]); err != nil {
			t.Fatal(err)
		}
		next++
	})
	if allocs > allocBudget {
		t.Fatalf("the receiver allocates %.1f times per unique message, budget %d", allocs, allocBudget)
	}
	t.Logf("%.1f allocations per unique message (budget %d)", allocs, allocBudget)
}
