// Package middleware holds the idempotent receiver, which makes a side
// effect happen once per idempotency key on transports that deliver at
// least once, in one package per part; it has no code of its own.
//
//   - receiver: the core. receiver.Receiver.Execute claims a key in a
//     record store, runs a function under a fenced lease (or in a unit of
//     work, in transaction mode), records its result, and answers a
//     duplicate with it. It knows none of its faces.
//   - consume: the Watermill face. consume.Middleware scopes keys by
//     handler, stores the produced messages and replays them;
//     consume.Install puts it on a router with what its guarantees
//     depend on, innermost of the router's chain.
//   - idempotencykey: the net/http face. idempotencykey.Middleware
//     guards unsafe requests by their Idempotency-Key header, per client;
//     idempotencykey.EffectKeys sends a run's effect key on outbound
//     requests.
//   - apikey: bearer API-key authentication, and the client identity the
//     HTTP face scopes its records by.
//   - signing: message signatures, so that no untrusted producer can
//     pre-empt a key.
//   - metrics: the receiver's Prometheus observer.
//   - tracecontext: the W3C trace context through Watermill messages.
//
// The router order consume.Install builds, outermost first:
//
//	(the router's own middlewares) -> recoverer -> Outer (metrics,
//	correlation, consumer span) -> [poison queue] -> [MaxPayload]
//	-> [Signer] -> KeepContext -> [retry] -> OutliveClose -> timeout
//	-> receiver -> Inner (producer trace context) -> handler
//
// The chain is added when the router runs, after the router's own
// middlewares, so none of them can run inside the receiver; the timeout
// bounds one attempt within the receiver's lease.
// On the HTTP side: authentication (apikey) -> routing (http.ServeMux)
// -> Idempotency-Key (idempotencykey) -> handler.
package middleware
