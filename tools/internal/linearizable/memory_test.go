package linearizable_test

import (
	"testing"

	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/tools/internal/linearizable"
)

// TestLinearizableMemory races clients on a few keys of one store with short
// leases and checks that every history fits the store contract's model
// (package linearizable).
func TestLinearizableMemory(t *testing.T) {
	s := memory.New(memory.Config{})
	t.Cleanup(func() { _ = s.Close() })
	linearizable.Run(t, s, linearizable.Config{})
}
