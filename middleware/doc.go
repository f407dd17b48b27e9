// Package middleware is the idempotent receiver: it makes a side effect
// happen once per idempotency key on transports that deliver at least once.
//
// The core, Receiver.Execute, knows nothing of any transport. It claims the
// key in a [stores.Store], runs the caller's function while holding a fenced
// lease (extended by a heartbeat), and records the function's result so that
// a duplicate gets the stored result instead of a second execution. A failed
// function releases its claim at once, so the redelivered message is
// processed again: a failure is never mistaken for a duplicate.
//
// Faces adapt the core to a transport. Receiver.Middleware is the Watermill
// face: a [message.HandlerMiddleware] that scopes keys by handler name, stores
// the handler's produced messages, and replays them on duplicates. Install
// puts it on a [message.Router] with the middlewares its guarantees depend
// on, in their order: the poison queue for errors a redelivery cannot fix
// (Permanent, PermanentErrors), a payload limit (MaxPayload), the retries,
// KeepContext, OutliveClose and the timeout.
// Receiver.HTTP is the net/http face: Idempotency-Key middleware that scopes
// keys by client, method and route, stores the response, and replays it on
// a retry. Authenticate resolves the client identity from a bearer API key;
// a request without one is refused (403) unless WithAnonymous says that
// every caller is one anonymous client.
//
// Every call of Execute ends in exactly one Outcome, reported to the
// Observer; NewPrometheusObserver exports them as metrics. With a
// Config.TracerProvider every call is also an OpenTelemetry span, its store
// calls spans within it. Tracing carries the W3C trace context through
// Watermill, in message metadata ([MetadataCarrier]), so that one trace
// follows a message from its publisher into every handler.
package middleware
