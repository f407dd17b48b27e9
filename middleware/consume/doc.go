// Package consume is the Watermill face of the idempotent receiver
// (package receiver): a [message.HandlerMiddleware] that runs a handler at
// most once per idempotency key and handler.
//
// [Middleware] scopes keys by handler name, takes the key from metadata
// [MetadataKey] (else the message UUID; see [KeyFunc] for others) and the
// fingerprint from the payload ([FingerprintFunc]), stores the handler's
// produced messages and replays them to duplicates. [Install] puts it on a
// [message.Router] with the middlewares its guarantees depend on, in their
// order, always innermost of the router's, so that none of a service's own
// middlewares can run inside it: [KeepContext], [OutliveClose] and the
// timeout, and when asked for, the poison queue for errors a redelivery
// cannot fix ([Poison], [Permanent], [PermanentErrors]), a payload limit
// ([MaxPayload]), signature checks (package signing) and the retries
// ([Retry]). Package tracecontext carries the W3C trace context through
// Watermill, for RouterConfig.Outer and Inner.
//
// Everything here is safe for concurrent use: one middleware serves every
// message of its handlers.
package consume
