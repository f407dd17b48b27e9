// Package poison keeps the messages a service could never process — its
// poisoned messages — so that an operator can look at them and, once the
// cause is fixed, send them back (redrive) or drop them (discard).
//
// The service's handlers publish such a message to the poison topic (see
// package consume's Poison); the topic's reader parks each one it reads
// in a [Store], bounded in count and bytes and kept for a retention
// period, and acknowledges it only once it is parked: a full store leaves
// it on the broker. A [Console] lists, shows, redrives and discards the
// parked messages; it is served under /admin/poison by package admin and
// called by `onceflow poison`.
//
// Parking is at least once: a reader that stops between parking and
// acknowledging parks the message again when it is redelivered. Redrive is
// at least once too (it publishes, then marks the message redriven), and
// is safe for that reason: a redriven message carries its original
// idempotency key and is deduplicated by the receiver like any other copy.
package poison
