package memory_test

import (
	"testing"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/stores/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) stores.Store {
			s := memory.New(memory.Config{})
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		Unavailable: func(t *testing.T) stores.Store {
			s := memory.New(memory.Config{})
			_ = s.Close()
			return s
		},
		Bounded: func(t *testing.T, capacity int) stores.Store {
			s := memory.New(memory.Config{MaxEntries: capacity})
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	})
}
