// Package exactlyonce is the PostgreSQL side of the receiver's transaction
// mode: the claim, the handler's writes, the completed record and the
// messages the handler produces commit in one transaction, or none of them
// does.
//
//   - [Transactor] is the [receiver.Transactor]: a unit of work is a pgx
//     transaction on the pool or, when the message was consumed by a
//     watermill-sql subscriber built on [ConsumerBeginner], a SAVEPOINT in
//     the subscriber's own transaction ([ConsumerTx]), so that the work
//     commits with the consumed offset.
//   - [Outbox.Write] is the [consume.Outbox]: it writes the produced messages
//     with a watermill-sql publisher on the unit's transaction, to their
//     topic's table or to one outbox table that [NewRelay] forwards to any
//     other broker.
//
// It is a package of its own so that a service that takes only package
// middleware and a store compiles no watermill-sql, nor pgx unless its
// store is PostgreSQL.
package exactlyonce
