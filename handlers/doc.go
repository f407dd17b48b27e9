// Package handlers is the example payments domain: the events, the message
// handlers that charge a payment and notify its customer, the HTTP API that
// accepts payments, and the ledger those handlers write to.
//
// The flow:
//
//	POST /v1/payments ──PaymentRequested──▶ charge_payment ──PaymentCharged──▶ notify_customer
//	   (ledger: accepted)   payments.requested  (ledger: charge row)  payments.charged  (ledger: notification row)
//
// [MessageHandlers.Routes] lists the message handlers with the topics they
// consume and produce: the application loops over that list to subscribe
// them on the configured broker behind the idempotent receiver, so adding a
// handler touches this package only.
//
// The package knows nothing of brokers or idempotency stores. Message
// handlers are plain Watermill handler functions and do their side effects
// naively — a charge row per execution — because the idempotent receiver
// that the application wraps around them is what makes each side effect
// happen once. Every message they produce, and every PaymentRequested the
// HTTP API publishes, carries the payment id as metadata IdempotencyKeyMetadata.
//
// Malformed input is never retried: decoding errors match ErrMalformed, so the
// router can send such a message straight to the poison queue with the reason.
package handlers

// Names of the message handlers, as registered on the router. They also scope
// the idempotency keys, so renaming one makes already processed messages look
// new.
const (
	// ChargePaymentHandler consumes TopicPaymentRequested and produces
	// TopicPaymentCharged.
	ChargePaymentHandler = "charge_payment"
	// NotifyCustomerHandler consumes TopicPaymentCharged.
	NotifyCustomerHandler = "notify_customer"
)

// Topics of the payments domain.
const (
	// TopicPaymentRequested carries PaymentRequested events.
	TopicPaymentRequested = "payments.requested"
	// TopicPaymentCharged carries PaymentCharged events.
	TopicPaymentCharged = "payments.charged"
)

// IdempotencyKeyMetadata is the message metadata key under which producers
// put the idempotency key of a message: here always the payment id.
const IdempotencyKeyMetadata = "idempotency_key"
