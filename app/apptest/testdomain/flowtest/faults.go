package flowtest

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// errInjected is the fault failOnceAfterCharge injects.
var errInjected = errors.New("injected failure after the ledger write")

// failOnceAfterCharge fails the first attempt of the charge route after
// its function charged and wrote the charge row, as a crash or a later
// error of the function would, before anything is committed or recorded.
type failOnceAfterCharge struct{ fired atomic.Bool }

func (f *failOnceAfterCharge) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := h(msg)
		if err == nil && message.HandlerNameFromCtx(msg.Context()) == testdomain.ChargeRoute &&
			f.fired.CompareAndSwap(false, true) {
			return nil, errInjected
		}
		return out, err
	}
}

// Whether ChargesAfterInjectedFailure's routes get their effect keys:
// lease mode's window shows only without them.
const (
	WithoutEffectKeys = false
	WithEffectKeys    = true
)

// ChargesAfterInjectedFailure starts the test domain (with start:
// apptest.Start is one) on the in-process transport and a PostgreSQL
// schema of its own, then env, with the first attempt of the charge route
// failing after the route's effects, and the routes' effect keys taken
// away unless keys. It sends one request, waits until it is noticed and
// receipted (the charge route's retry redelivered it and its event went
// through) and returns how many charge rows the ledger holds: 1 when the
// failed attempt's effect was undone or kept once, 2 when the retry made
// it again.
func ChargesAfterInjectedFailure[S Service](t testing.TB, start func(testing.TB, domain.Domain, ...string) S, keys bool, env ...string) int64 {
	t.Helper()
	fault := &failOnceAfterCharge{}
	d := faults.Wrap(testdomain.Domain(testdomain.WithMiddleware(fault.middleware)), faults.Config{NoEffectKeys: !keys})
	s := start(t, d, append([]string{"TRANSPORT=gochannel", "DATABASE_URL=" + testenv.PostgresSchema(t)}, env...)...)
	PostOK(t, s, watermill.NewUUID())
	// Every route done, not only the notify route: stopping the service
	// while another consumer of the event is still in an attempt would cut
	// it.
	testenv.WaitFor(t, Wait, "the request noticed and receipted", func() bool {
		got := Tally(t, s)
		return got.Notices.Rows == 1 && got.Receipts.Rows == 1
	})
	if !fault.fired.Load() {
		t.Fatal("the fault was never injected")
	}
	return Tally(t, s).Charges.Rows
}
