// Package admin is the key admin: it reads, releases and evicts the
// idempotency records of one service, on any store that implements
// [stores.Admin], and serves that over HTTP under /admin/keys (see
// [Service.Handler]), which `onceflow keys` calls.
//
// An operator names a record as the receiver derives it, never by its raw
// store key: a message handler and the idempotency key of its messages
// ([receiver.RecordKey]), or, for the HTTP face (handler "http"), the
// route, the client and the Idempotency-Key ([idempotencykey.RequestKey]). A
// client's key therefore reaches that client's record only: another
// client's record under the same key is not found, and nothing says it
// exists.
//
// What each action does:
//
//   - get reads the live record (in progress or completed), changing
//     nothing.
//   - release frees an in-progress key, so that the next copy of the
//     message (or retry of the request) runs the handler. Its owner holds a
//     live lease, so release is refused unless forced: the owner may still
//     be running, and a forced release lets a second run happen alongside
//     it. Unforced, the refusal says when the lease ends, which frees the
//     key by itself.
//   - evict removes a completed record, so that the next copy runs the
//     handler again instead of being answered as a duplicate.
//
// Each operator has a key of their own ([Service.Handler]), and every
// action is logged as the operator whose key it carried: nothing a request
// says of itself names its actor. A source that keeps sending wrong keys
// is throttled ([Throttle]).
//
// Removal is a compare-and-delete on the record that was read: a record
// that changed meanwhile (completed, taken over) is left alone and the
// action answered with a conflict. A local cache of completed records
// (stores/cache) in this process drops the key at once; other processes'
// caches may still answer it as a duplicate for up to their
// DEDUP_CACHE_MAX_AGE.
package admin
