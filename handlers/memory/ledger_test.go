package memory_test

import (
	"testing"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/ledgertest"
	"github.com/onceflow/onceflow/handlers/memory"
)

func TestLedger(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(*testing.T) handlers.Ledger { return memory.NewLedger() })
}
