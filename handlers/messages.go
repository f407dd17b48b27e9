package handlers

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/google/uuid"
)

// MessageHandlers holds the message handlers of the payments domain. Its
// methods are Watermill handler functions, safe to run concurrently, that
// read the message's context (msg.Context()) for cancellation and for a
// transaction the ledger may join.
//
// They do their side effects on every call: register them behind the
// idempotent receiver.
type MessageHandlers struct {
	ledger Ledger
	logger *slog.Logger
	now    func() time.Time
}

// NewMessageHandlers returns the message handlers writing to ledger, which
// must not be nil. A nil logger discards.
func NewMessageHandlers(ledger Ledger, logger *slog.Logger) *MessageHandlers {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &MessageHandlers{ledger: ledger, logger: logger, now: time.Now}
}

// ChargePayment is the ChargePaymentHandler: it decodes a PaymentRequested,
// charges it (one charge row with a new charge id) and returns one
// PaymentCharged for TopicPaymentCharged, of the same client, with a new
// UUID, the payment's [Payment.IdempotencyKey] as its idempotency key and
// the correlation id of msg. A malformed message yields an error matching
// ErrMalformed.
func (h *MessageHandlers) ChargePayment(msg *message.Message) ([]*message.Message, error) {
	req, err := DecodePaymentRequested(msg.Payload)
	if err != nil {
		return nil, err
	}
	ctx := msg.Context()
	chargeID := uuid.NewString()
	if err := h.ledger.AppendCharge(ctx, req.Payment(), chargeID); err != nil {
		return nil, fmt.Errorf("charging payment %q: %w", req.PaymentID, err)
	}
	out, err := PaymentCharged{
		Client:      req.Client,
		PaymentID:   req.PaymentID,
		CustomerID:  req.CustomerID,
		AmountCents: req.AmountCents,
		Currency:    req.Currency,
		ChargeID:    chargeID,
		ChargedAt:   h.now().UTC(),
	}.Message()
	if err != nil {
		return nil, err
	}
	if id := middleware.MessageCorrelationID(msg); id != "" {
		middleware.SetCorrelationID(id, out)
	}
	h.logger.InfoContext(ctx, "payment charged",
		"payment_id", req.PaymentID, "charge_id", chargeID, "message_uuid", msg.UUID)
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
