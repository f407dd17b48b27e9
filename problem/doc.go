// Package problem answers HTTP errors as RFC 9457 problem details
// (application/problem+json), from one table.
//
// A handler or middleware says what went wrong, not which status to send:
// it builds an [Error] of a [Kind], with a detail for people and, for
// [Invalid], the invalid fields, and hands it to [Write]. The table in
// kinds.go maps each Kind to its status and to the headers it calls for
// (Retry-After), so that every part of a service answers the same error
// the same way. Any other error is answered as [Internal], without a
// detail: a 5xx never shows an internal error to the client.
//
// The package is a leaf (the standard library only), so that the
// idempotent receiver's HTTP face ([github.com/onceflow/onceflow/middleware])
// and a domain's HTTP handlers
// share it without depending on each other.
package problem
