package app

import (
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// start is startDomain as flowtest's checks start a service.
func start(t testing.TB, d domain.Domain, environ ...string) *running {
	t.Helper()
	return startDomain(t, d, seams{}, testLogger(t), environ...)
}

// TestInjectedFailureAfterLedgerWrite is the reason transaction mode
// exists. A route fails after its ledger write and before it finishes;
// the message is redelivered. In lease mode without effect keys the charge
// row stays (it was committed on its own) while the claim is released, so
// the redelivery charges again. In transaction mode the charge rolls back
// with the claim, so the redelivery leaves exactly one. In lease mode with
// effect keys the redelivery's row has the first one's key and is not
// added: one charge too, the ledger's own way of closing the window.
func TestInjectedFailureAfterLedgerWrite(t *testing.T) {
	testenv.Integration(t)
	testenv.Redis(t)
	redis := []string{"STORE=redis", "REDIS_URL=redis://" + testenv.RedisAddr() + "/0", "DEDUP_MODE=lease"}
	lease := flowtest.ChargesAfterInjectedFailure(t, start, flowtest.WithoutEffectKeys, redis...)
	tx := flowtest.ChargesAfterInjectedFailure(t, start, flowtest.WithEffectKeys, "STORE=postgres", "DEDUP_MODE=transaction")
	keyed := flowtest.ChargesAfterInjectedFailure(t, start, flowtest.WithEffectKeys, redis...)
	t.Logf("after an injected failure after the ledger write: lease mode (redis) charges=%d without effect keys, %d with; transaction mode (postgres): charges=%d", lease, keyed, tx)
	if lease != 2 {
		t.Errorf("lease mode without effect keys: %d charges, want 2 (the double charge transaction mode prevents)", lease)
	}
	if tx != 1 {
		t.Errorf("transaction mode: %d charges, want exactly 1", tx)
	}
	if keyed != 1 {
		t.Errorf("lease mode with effect keys: %d charges, want exactly 1", keyed)
	}
}
