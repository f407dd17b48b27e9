package app

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/onceflow/onceflow/handlers"
)

// errChaos is the failure the fault switches inject.
var errChaos = errors.New("fault injected by CHAOS_FAIL_BEFORE or CHAOS_FAIL_AFTER")

// chaosLedger is the fault switches of Config (CHAOS_FAIL_BEFORE,
// CHAOS_FAIL_AFTER, CHAOS_DELAY) around the message handlers' ledger
// writes, AppendCharge and AppendNotification: it sleeps for delay, fails
// with probability failBefore without writing, or writes and then fails
// with probability failAfter. A failure after the write is what a crash
// between a side effect and its acknowledgement looks like: in transaction
// mode the write rolls back with the claim, in lease mode it stays and the
// redelivery writes again. The other methods pass through. It is a test
// aid, off by default and refused with ENV=production.
type chaosLedger struct {
	handlers.Ledger
	failBefore, failAfter float64
	delay                 time.Duration
}

var _ handlers.Ledger = chaosLedger{}

// withChaos wraps l in the fault switches cfg sets, or returns l when none
// is set.
func withChaos(l handlers.Ledger, cfg Config) handlers.Ledger {
	if !cfg.chaosEnabled() {
		return l
	}
	return chaosLedger{Ledger: l, failBefore: cfg.ChaosFailBefore, failAfter: cfg.ChaosFailAfter, delay: cfg.ChaosDelay}
}

// AppendCharge writes the charge between the faults.
func (c chaosLedger) AppendCharge(ctx context.Context, p handlers.Payment, chargeID string) error {
	return c.around(ctx, func() error { return c.Ledger.AppendCharge(ctx, p, chargeID) })
}

// AppendNotification writes the notification between the faults.
func (c chaosLedger) AppendNotification(ctx context.Context, p handlers.Payment, chargeID string) error {
	return c.around(ctx, func() error { return c.Ledger.AppendNotification(ctx, p, chargeID) })
}

func (c chaosLedger) around(ctx context.Context, write func() error) error {
	if c.delay > 0 {
		t := time.NewTimer(c.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if c.failBefore > 0 && rand.Float64() < c.failBefore {
		return errChaos
	}
	if err := write(); err != nil {
		return err
	}
	if c.failAfter > 0 && rand.Float64() < c.failAfter {
		return errChaos
	}
	return nil
}
