package memory_test

import (
	"testing"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/stores/storetest"
)

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) stores.Store {
		s := memory.New(memory.Config{MaxEntries: 1 << 22})
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
