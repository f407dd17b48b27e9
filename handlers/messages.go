package handlers

import (
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

// MessageHandlers holds the message handlers of the payments domain. Its
// methods are Watermill handler functions, safe to run concurrently, that
// read the message's context (msg.Context()) for cancellation, for a
// transaction the ledger may join and for the effect key the charger
// hands the provider.
//
// They do their side effects on every call: register them behind the
// idempotent receiver.
type MessageHandlers struct {
	ledger  Ledger
	charger Charger
	logger  *slog.Logger
}

// NewMessageHandlers returns the message handlers writing to ledger and
// charging payments with charger. ledger must not be nil; charger may be
// nil only where the handlers are listed (Routes) and never run. A nil
// logger discards.
func NewMessageHandlers(ledger Ledger, charger Charger, logger *slog.Logger) *MessageHandlers {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &MessageHandlers{ledger: ledger, charger: charger, logger: logger}
}

// chargeEffect names charge_payment's one effect, the charge at the
// provider (see [idempotencykey.WithEffectName]). Like a handler's name it is
// part of every effect key: changed once deployed, a retry of a run that
// charged before the change charges again.
const chargeEffect = "charge"

// ChargePayment is the ChargePaymentHandler: it decodes a PaymentRequested,
// charges it at the payment provider through the [Charger], adds a charge
// row with the provider's charge id to the ledger, and returns one
// PaymentCharged for TopicPaymentCharged, of the same client, with the
// provider's charge id and time, a new UUID, the payment's
// [Payment.IdempotencyKey] as its idempotency key and the correlation id
// of msg. A malformed message yields an error matching ErrMalformed, a
// charge the provider refuses for good one matching
// [provider.ErrRefused]; other errors are worth a retry.
//
// A run that charged and then failed (the ledger write, say) charges again
// when it is retried: the provider makes one charge of the two only when
// the charger's requests carry the run's effect key
// ([idempotencykey.EffectKeys]).
func (h *MessageHandlers) ChargePayment(msg *message.Message) ([]*message.Message, error) {
	req, err := DecodePaymentRequested(msg.Payload)
	if err != nil {
		return nil, err
	}
	// The charge's effect key is named, not derived from the provider's
	// URL, so that a retry after the URL changed sends the same key.
	ctx := idempotencykey.WithEffectName(msg.Context(), chargeEffect)
	p := req.Payment()
	charge, err := h.charger.Charge(ctx, provider.ChargeRequest{
		PaymentID: p.IdempotencyKey(), CustomerID: p.CustomerID, AmountCents: p.AmountCents, Currency: p.Currency,
	})
	if err != nil {
		return nil, fmt.Errorf("charging payment %q: %w", req.PaymentID, err)
	}
	if err := h.ledger.AppendCharge(ctx, p, charge.ID); err != nil {
		return nil, fmt.Errorf("recording charge %s of payment %q: %w", charge.ID, req.PaymentID, err)
	}
	out, err := PaymentCharged{
		Client:      req.Client,
		PaymentID:   req.PaymentID,
		CustomerID:  req.CustomerID,
		AmountCents: req.AmountCents,
		Currency:    req.Currency,
		ChargeID:    charge.ID,
		ChargedAt:   charge.CreatedAt.UTC(),
	}.Message()
	if err != nil {
		return nil, err
	}
	if id := wmmw.MessageCorrelationID(msg); id != "" {
		wmmw.SetCorrelationID(id, out)
	}
	h.logger.InfoContext(ctx, "payment charged",
		"payment_id", req.PaymentID, "charge_id", charge.ID, "replayed_by_provider", charge.Replayed, "message_uuid", msg.UUID)
	return []*message.Message{out}, nil
}

// NotifyCustomer is the NotifyCustomerHandler: it decodes a PaymentCharged
// and records one notification of its customer. A malformed message yields
// an error matching ErrMalformed.
func (h *MessageHandlers) NotifyCustomer(msg *message.Message) error {
	charged, err := DecodePaymentCharged(msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	if err := h.ledger.AppendNotification(ctx, charged.Payment(), charged.ChargeID); err != nil {
		return fmt.Errorf("notifying customer of payment %q: %w", charged.PaymentID, err)
	}
	h.logger.InfoContext(ctx, "customer notified",
		"payment_id", charged.PaymentID, "customer_id", charged.CustomerID, "message_uuid", msg.UUID)
	return nil
}

// IssueReceipt is the IssueReceiptHandler: it decodes a PaymentCharged and
// issues one receipt for the charge. It is the second handler on
// TopicPaymentCharged: the receiver scopes idempotency keys by handler
// name, so it and NotifyCustomer each do their side effect once per
// payment. A malformed message yields an error matching ErrMalformed.
func (h *MessageHandlers) IssueReceipt(msg *message.Message) error {
	charged, err := DecodePaymentCharged(msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	if err := h.ledger.AppendReceipt(ctx, charged.Payment(), charged.ChargeID); err != nil {
		return fmt.Errorf("issuing receipt for payment %q: %w", charged.PaymentID, err)
	}
	h.logger.InfoContext(ctx, "receipt issued",
		"payment_id", charged.PaymentID, "charge_id", charged.ChargeID, "message_uuid", msg.UUID)
	return nil
}
