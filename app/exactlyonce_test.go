package app

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
)

// errInjected is the fault failOnceAfterCharge injects.
var errInjected = errors.New("injected failure after the ledger write")

// failOnceAfterCharge fails the first charge_payment attempt after its
// handler wrote the charge row, as a crash or a later error of the handler
// would, before anything is committed or recorded.
type failOnceAfterCharge struct{ fired atomic.Bool }

func (f *failOnceAfterCharge) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := h(msg)
		if err == nil && message.HandlerNameFromCtx(msg.Context()) == handlers.ChargePaymentHandler &&
			f.fired.CompareAndSwap(false, true) {
			return nil, errInjected
		}
		return out, err
	}
}

// Whether a test App's handlers get their effect keys: lease mode's window
// shows only without them.
const (
	withoutEffectKeys = false
	withEffectKeys    = true
)

// chargesAfterInjectedFailure runs an App in the given mode with the fault
// injected, and the handlers' effect keys taken away unless keys, sends
// one payment, waits until it is notified and given a receipt (the
// handler's retry redelivered it and its event went through) and returns
// how many charges the ledger holds.
func chargesAfterInjectedFailure(t *testing.T, keys bool, environ ...string) int {
	t.Helper()
	fault := &failOnceAfterCharge{}
	d := faults.Wrap(faults.WrapRoutes(payments.Domain(), fault.middleware), faults.Config{NoEffectKeys: !keys})
	a := startDomain(t, d, seams{}, testLogger(t),
		append([]string{"TRANSPORT=gochannel", "DATABASE_URL=" + testenv.PostgresSchema(t)}, environ...)...)
	if code := a.post(t, "/v1/payments", paymentBody(uuid.NewString())); code != http.StatusAccepted {
		t.Fatalf("POST /v1/payments: status %d, want 202", code)
	}
	// Every route done, not only notify_customer: stopping the App while
	// another consumer of the event is still in an attempt would cut it.
	waitFor(t, "the payment notified and given a receipt", func() bool {
		return a.summary(t).Notifications == 1 && a.receipts(t) == 1
	})
	if !fault.fired.Load() {
		t.Fatal("the fault was never injected")
	}
	return a.summary(t).Charges
}

// TestInjectedFailureAfterLedgerWrite is the reason transaction mode
// exists. A handler fails after its ledger write and before it finishes;
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
	lease := chargesAfterInjectedFailure(t, withoutEffectKeys, redis...)
	tx := chargesAfterInjectedFailure(t, withEffectKeys, "STORE=postgres", "DEDUP_MODE=transaction")
	keyed := chargesAfterInjectedFailure(t, withEffectKeys, redis...)
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

// TestInjectedFailureOnSQLTransport is the same fault in transaction mode on
// the sql transport, where the handler runs in a savepoint of the
// subscriber's own transaction: the failed attempt rolls back to it, and
// the event goes straight to its topic table in the same transaction.
func TestInjectedFailureOnSQLTransport(t *testing.T) {
	testenv.Integration(t)
	charges := chargesAfterInjectedFailure(t, withEffectKeys, "TRANSPORT=sql", "STORE=postgres", "DEDUP_MODE=transaction",
		"SQL_POLL_INTERVAL=10ms")
	t.Logf("transaction mode (postgres, sql transport): charges=%d", charges)
	if charges != 1 {
		t.Errorf("transaction mode on the sql transport: %d charges, want exactly 1", charges)
	}
}

// With the faults build's CHAOS_FAIL_AFTER=1 around every route, each
// handler attempt fails after its write, and the broker (the sql
// transport) redelivers it. Transaction mode rolls each write back: after
// several failed attempts the ledger holds no charge. Lease mode without
// effect keys (CHAOS_NO_EFFECT_KEYS) keeps every write: each attempt
// charges again. With them it keeps the first attempt's charge only.
func TestFailAfterEveryAttemptThroughTheApp(t *testing.T) {
	testenv.Integration(t)
	testenv.Redis(t)
	const attempts = 2
	charges := func(t *testing.T, keys bool, environ ...string) int {
		d := faults.Wrap(payments.Domain(), faults.Config{FailAfter: 1, NoEffectKeys: !keys})
		a := startDomain(t, d, seams{}, testLogger(t),
			append([]string{"TRANSPORT=sql", "SQL_POLL_INTERVAL=10ms", "DATABASE_URL=" + testenv.PostgresSchema(t),
				"LOG_LEVEL=error"}, environ...)...)
		if code := a.post(t, "/v1/payments", paymentBody(uuid.NewString())); code != http.StatusAccepted {
			t.Fatalf("POST /v1/payments: status %d, want 202", code)
		}
		waitFor(t, "several failed attempts", func() bool {
			return a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "failed") >= attempts
		})
		return a.summary(t).Charges
	}
	redis := []string{"STORE=redis", "REDIS_URL=redis://" + testenv.RedisAddr() + "/0", "DEDUP_MODE=lease"}
	t.Run("transaction", func(t *testing.T) {
		if got := charges(t, withEffectKeys, "STORE=postgres", "DEDUP_MODE=transaction"); got != 0 {
			t.Errorf("transaction mode: %d charges, want 0 (every failed attempt rolled back)", got)
		}
	})
	t.Run("lease", func(t *testing.T) {
		if got := charges(t, withoutEffectKeys, redis...); got < attempts {
			t.Errorf("lease mode without effect keys: %d charges, want at least %d (one per failed attempt, kept)", got, attempts)
		}
	})
	t.Run("lease with effect keys", func(t *testing.T) {
		if got := charges(t, withEffectKeys, redis...); got != 1 {
			t.Errorf("lease mode with effect keys: %d charges, want 1 (the first attempt's)", got)
		}
	})
}
