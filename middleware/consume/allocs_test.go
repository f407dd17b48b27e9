//go:build !race

package consume

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// allocBudget is the most allocations the receiver may add to a unique
// message on the memory store, the store's own included (the bench's
// receiver-allocs target holds a router to the same budget). The race
// detector allocates on its own, hence the build tag.
const allocBudget = 10

func TestReceiverAllocationBudget(t *testing.T) {
	r, _ := receivertest.NewBenchReceiver(t, receiver.Config{})
	h := Middleware(r)(func(*message.Message) ([]*message.Message, error) { return nil, nil })
	ctx := receivertest.HandlerContext(t)

	const runs = 1000
	msgs := make([]*message.Message, runs+1) // AllocsPerRun warms up once
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), receivertest.BenchPayload(i))
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
