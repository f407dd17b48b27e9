// Package receiver is the idempotent receiver's core: it makes a side
// effect happen once per idempotency key on transports that deliver at
// least once, and knows nothing of any transport.
//
// [Receiver.Execute] claims the key in a [stores.Store], runs the caller's
// function while holding a fenced lease (extended by a heartbeat), and
// records the function's result so that a duplicate gets the stored result
// instead of a second execution. A failed function releases its claim at
// once, so the redelivered message is processed again: a failure is never
// mistaken for a duplicate. With a [Transactor] (transaction mode) the
// claim, the function's writes and the record commit in one unit of work
// instead. The state machine of both modes reads top to bottom in
// machine.go.
//
// Every call of Execute ends in exactly one [Outcome], reported to the
// [Observer]. With Config.TracerProvider every call is also an
// OpenTelemetry span, its store calls spans within it. The function's
// context carries the fencing token ([TokenFromContext]) and the run's
// effect keys ([EffectKey]), which carry idempotency on to the systems the
// function changes.
//
// Faces adapt the core to a transport, each in a package of its own:
// middleware/consume (Watermill), middleware/idempotencykey (net/http). A
// face tells the core an outcome of its own through an [OutcomeError].
// The core is safe for concurrent use: one Receiver serves every handler
// and route of a process.
package receiver
