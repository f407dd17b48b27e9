package memory_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/poison/memory"
	"github.com/onceflow/onceflow/poison/poisontest"
)

func TestStore(t *testing.T) {
	poisontest.Run(t, poisontest.Harness{New: func(t *testing.T, l poison.Limits, now func() time.Time) poison.Store {
		s, err := memory.New(l, now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}})
}
