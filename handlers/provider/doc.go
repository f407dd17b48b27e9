// Package provider is the payment provider that the payments example
// charges: a small service of its own, which the charge_payment handler
// calls over HTTP as it would call a real one.
//
// Its one unsafe route, POST /charges ([RouteCharge]), makes a charge and
// answers 201 with it. It is guarded by onceflow's own HTTP face
// ([idempotencykey.Middleware]), so it keeps the promise that an effect key
// relies on: a request that repeats an Idempotency-Key is answered with the
// first request's charge (Idempotent-Replayed: true) and charges nothing;
// the same key with another body is refused with 422. A request without a
// key is charged every time, as a provider that takes the key as optional
// does: that is the window the key closes, and the tests show it.
//
// The provider counts what it did, not what its caller thinks it did:
// GET /charges/count ([RouteChargeCount]) is the number of charges made,
// for tests and the fault suite to compare with the ledger.
//
// With a PostgreSQL pool ([Config].DB) its Idempotency-Key records and its
// charges live in that database, migrated by [New], and each charge
// commits in one transaction with its record (the receiver's transaction
// mode), so even a provider that crashes mid-request charges a key once.
// Without one both live in memory, for development and the in-process
// provider the payments domain starts when PAYMENT_PROVIDER_URL is unset.
//
// [Client] is its client, as a provider's SDK would be; [Listen] serves it
// on an address; [Command] is `onceflow provider`.
package provider
