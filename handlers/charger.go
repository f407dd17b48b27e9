package handlers

import (
	"context"

	"github.com/onceflow/onceflow/handlers/provider"
)

// Charger charges payments at the payment provider. *[provider.Client]
// does, over HTTP; the payments domain gives it the transport
// [github.com/onceflow/onceflow/middleware/idempotencykey.EffectKeys], so that every run of charge_payment for one
// payment sends the provider the same Idempotency-Key. Implementations
// are safe for concurrent use.
type Charger interface {
	// Charge asks the provider to charge req and returns the charge it
	// answered with: a new one, or the one it made for an earlier request
	// of the same key. ctx is the handler's: it bounds the call and
	// carries the run's effect key. An error matching
	// [provider.ErrRefused] will not change on a retry.
	Charge(ctx context.Context, req provider.ChargeRequest) (provider.Charge, error)
}

var _ Charger = (*provider.Client)(nil)
