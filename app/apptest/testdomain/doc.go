// Package testdomain is the template's own domain: what the service's
// tests, the bench and the fault suite run on, so that they stand on
// nothing a fork deletes. It is about nothing in particular and exercises
// everything the service does with a domain: an unsafe HTTP route behind
// the Idempotency-Key face that records a row and publishes an event
// (through the outbox in DEDUP_MODE=transaction), a route that makes an
// effect at a provider over HTTP with the run's effect key, and two
// routes on one topic, each with an effect of its own.
//
// A request goes through it so (a row of the [Ledger] at each step):
//
//   - POST /v1/charges ([CreatePattern]) adds a [Requests] row and
//     publishes the request's [Event] on [TopicRequested];
//   - route [ChargeRoute] charges it at the provider (package provider),
//     adds a [Charges] row and publishes the event with the provider's
//     charge on [TopicCharged];
//   - routes [NotifyRoute] and [ReceiptRoute] each add a row of their own
//     kind, [Notices] and [Receipts].
//
// Every row is keyed by the effect key of the run that adds it, so that a
// run repeated in lease mode (a failure or a crash after its effect) adds
// nothing; the provider makes one charge per Idempotency-Key. A [Tally]
// counts rows and distinct ids per kind: rows beyond ids are doubles. The
// ledger is in PostgreSQL when the service has a database, joining the
// unit of work in DEDUP_MODE=transaction, and in memory otherwise.
//
// It is test machinery: tests, the bench and the fault suite import it,
// and it imports no package of the service's composition (app), so that
// app's own tests can.
package testdomain

// Name is the domain's name: its migrations are versioned in
// goose_db_version_testdomain.
const Name = "testdomain"

// Topics of the domain's events.
const (
	// TopicRequested carries an [Event] per accepted request.
	TopicRequested = "testdomain.requested"
	// TopicCharged carries the [Event] of a charged request, its Charge
	// set.
	TopicCharged = "testdomain.charged"
)

// Names of the message routes. They scope the receiver's keys and name
// the routes' consumer groups and metric labels.
const (
	// ChargeRoute consumes TopicRequested and produces TopicCharged.
	ChargeRoute = "charge"
	// NotifyRoute consumes TopicCharged.
	NotifyRoute = "notify"
	// ReceiptRoute consumes TopicCharged too, apart from NotifyRoute:
	// the route that the service knows nothing of.
	ReceiptRoute = "receipt"
)

// ProviderSetting is the base URL of the provider that ChargeRoute
// charges, such as http://127.0.0.1:8090. Unset, the domain starts one in
// process, its charges in memory.
const ProviderSetting = "TESTDOMAIN_PROVIDER_URL"

// ModesSetting gives routes a mode of their own (domain.Route.Mode), as
// comma-separated route=mode pairs, such as
// "notify=transaction,receipt=transaction": the ledger's routes then
// commit their rows with their records while ChargeRoute, which calls the
// provider, runs in lease mode. Unset, every route runs in DEDUP_MODE.
const ModesSetting = "TESTDOMAIN_ROUTE_MODES"
