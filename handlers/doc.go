// Package handlers is the example payments domain: the events, the message
// handlers that charge a payment, notify its customer and issue its receipt,
// the HTTP API that accepts payments, and the [Ledger] those handlers write
// to. The ledger's implementations live in packages named after what they
// keep it in: handlers/postgres (pgx, with the ledger's migrations) and
// handlers/memory. A payment is charged at a payment provider through a
// [Charger]: handlers/provider is that provider, a small service of its
// own, and its client. handlers/payments hands the domain to the service,
// and handlers/traffic adds its publish and load commands.
//
// The flow, each step with its side effect:
//
//	POST /v1/payments           ledger: the payment, accepted
//	   │ PaymentRequested on payments.requested
//	   ▼
//	charge_payment              provider: a charge, the run's effect key its Idempotency-Key
//	   │                        ledger: a charge row with the provider's charge id
//	   │ PaymentCharged on payments.charged
//	   ├──▶ notify_customer     ledger: a notification row
//	   └──▶ issue_receipt       ledger: a receipt row
//
// [MessageHandlers.Routes] lists the message handlers with the topics they
// consume and produce: the service loops over that list to subscribe
// them on the configured broker behind the idempotent receiver, so adding a
// handler touches this package only (a new kind of side effect adds a
// [Ledger] method to handlers/postgres, handlers/memory and a migration);
// "Add your own handler in 5 minutes" in docs/forking.md walks through it.
//
// The package knows nothing of brokers or idempotency stores. Message
// handlers are plain Watermill handler functions and do their side effects
// on every run, with no "already done?" check, because the idempotent
// receiver that the application wraps around them is what makes each side
// effect happen once. Where the receiver reaches its limit — a run that
// did its effect and then failed, or was killed, runs again in lease mode
// — the effect key it hands on keeps the effect once: the provider answers
// the second charge with the first ([idempotencykey.EffectKeys]), and the
// [Ledger] adds no second row under the run's key. Every message they
// produce, and every PaymentRequested the HTTP API publishes, carries the
// payment's [Payment.IdempotencyKey] (its id, after its client's name when
// it has one) as metadata [consume.MetadataKey], the receiver's
// idempotency key.
//
// A payment belongs to the API client that created it (the identity in
// the request's context, [apikey.ClientFromContext]), and its id is
// that client's own: the API reads, creates and counts the caller's
// payments only, and the events carry the client on.
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
	// IssueReceiptHandler consumes TopicPaymentCharged too, with a side
	// effect of its own.
	IssueReceiptHandler = "issue_receipt"
)

// Topics of the payments domain.
const (
	// TopicPaymentRequested carries PaymentRequested events.
	TopicPaymentRequested = "payments.requested"
	// TopicPaymentCharged carries PaymentCharged events.
	TopicPaymentCharged = "payments.charged"
)
