// Package idempotencykey is the net/http face of the idempotent receiver
// (package receiver), after the IETF httpapi Idempotency-Key draft.
//
// [Middleware] guards unsafe requests: it scopes each record by the
// client identity (package apikey's [apikey.ClientFromContext]), the
// method, the route and the Idempotency-Key header ([Header]), runs the
// handler at most once per key, stores its response and replays it,
// byte-identical, to a retry. It answers every misuse as a
// [*problem.Error]: 400 for a missing or malformed key, 409 while the
// first request is in flight, 422 for a key reused with another request,
// 429 for a client over its quota, 503 while the store is unavailable.
// [Parse] and [RequestKey] derive what it keys by, for tools that read its
// records.
//
// [EffectKeys] is the outbound side: an [http.RoundTripper] that sends a
// receiver run's effect key as Idempotency-Key, so that a provider guarded
// the same way does a handler's effect once however often the handler
// runs. Everything here is safe for concurrent use.
package idempotencykey
