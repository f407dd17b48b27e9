package testdomain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/problem"
)

// handlers are the functions of the domain's message routes. They make
// their effects on every call, with no "already done?" check: the
// receiver around them, and the effect keys it hands on, keep each
// effect once.
type handlers struct {
	ledger Ledger
	charge chargeFunc
	logger *slog.Logger
}

// chargeFunc charges amount for ref at the provider, with ctx's effect
// key, and returns the charge's id.
type chargeFunc func(ctx context.Context, ref string, amount int64) (string, error)

// Routes lists the domain's message routes as Open builds them, for what
// loops over every route the service runs (names, topics, consumer
// groups). Their functions add to a ledger of their own and charge
// nothing: every charge fails.
func Routes() domain.Routes {
	noProvider := func(context.Context, string, int64) (string, error) {
		return "", errors.New("the functions of Routes charge at no provider")
	}
	return handlers{ledger: NewMemoryLedger(), charge: noProvider, logger: slog.New(slog.DiscardHandler)}.routes(nil)
}

// routes lists the routes, each function behind mws, the first outermost.
func (h handlers) routes(mws []message.HandlerMiddleware) domain.Routes {
	wrap := func(f message.HandlerFunc) message.HandlerFunc {
		for i := len(mws) - 1; i >= 0; i-- {
			f = mws[i](f)
		}
		return f
	}
	consume := func(f message.HandlerFunc) message.NoPublishHandlerFunc {
		f = wrap(f)
		return func(msg *message.Message) error { _, err := f(msg); return err }
	}
	return domain.Routes{
		{Name: ChargeRoute, Consumes: TopicRequested, Produces: TopicCharged, Handle: wrap(h.chargeRequest)},
		{Name: NotifyRoute, Consumes: TopicCharged, Consume: consume(h.record(Notices))},
		{Name: ReceiptRoute, Consumes: TopicCharged, Consume: consume(h.record(Receipts))},
	}
}

// chargeRequest is ChargeRoute's function: it charges the request at the
// provider, adds its Charges row and returns its event with the charge,
// keyed and correlated as the request's.
func (h handlers) chargeRequest(msg *message.Message) ([]*message.Message, error) {
	e, err := Decode(msg.Payload)
	if err != nil {
		return nil, err
	}
	// Named, so that the key does not change with the provider's URL.
	ctx := idempotencykey.WithEffectName(msg.Context(), "provider-charge")
	if e.Charge, err = h.charge(ctx, e.Key(), e.Amount); err != nil {
		return nil, fmt.Errorf("charging %q: %w", e.Key(), err)
	}
	if err := h.ledger.Add(ctx, Charges, e.Key()); err != nil {
		return nil, err
	}
	out := e.Message()
	if id := wmmw.MessageCorrelationID(msg); id != "" {
		wmmw.SetCorrelationID(id, out)
	}
	h.logger.InfoContext(ctx, "request charged", "id", e.Key(), "charge", e.Charge)
	return []*message.Message{out}, nil
}

// record is the function of a route of TopicCharged: it adds a row of
// kind for each charged request.
func (h handlers) record(kind Kind) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		e, err := Decode(msg.Payload)
		if err == nil && e.Charge == "" {
			err = malformed(problem.FieldError{Field: "charge", Detail: "must be set on " + TopicCharged})
		}
		if err != nil {
			return nil, err
		}
		if err := h.ledger.Add(msg.Context(), kind, e.Key()); err != nil {
			return nil, err
		}
		h.logger.InfoContext(msg.Context(), "request's "+string(kind)+" recorded", "id", e.Key(), "charge", e.Charge)
		return nil, nil
	}
}
