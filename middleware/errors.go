package middleware

import "errors"

// Errors returned by Execute and the faces. Test them with errors.Is.
var (
	// ErrInProgress means another owner is processing the key. Retrying
	// later is safe: the transport should redeliver.
	ErrInProgress = errors.New("in_progress: key is being processed by another owner")

	// ErrFingerprintMismatch means the key was first used for a different
	// payload. Execute returns it wrapped with the key. Redelivery cannot
	// fix it: see Permanent.
	ErrFingerprintMismatch = errors.New("fingerprint_mismatch: idempotency key reused with a different payload")

	// ErrNoKey means no idempotency key (or no scope) could be derived.
	// Redelivery cannot fix it: see Permanent.
	ErrNoKey = errors.New("no idempotency key")

	// ErrUnreadableResult means a stored result could not be decoded, so a
	// duplicate cannot be answered. Redelivery cannot fix it: see Permanent.
	ErrUnreadableResult = errors.New("unreadable stored result")
)

// errNotStored, wrapped in the error of the function passed to Execute,
// says that the function succeeded but its result must not be recorded:
// Execute releases the claim and reports OutcomeNotStored.
var errNotStored = errors.New("result not stored")

// Permanent reports whether err is one that redelivering the same message
// can never fix: a fingerprint mismatch, a missing key, an unreadable stored
// result. Use it to skip retries and to route such messages to a poison
// queue, for example with watermill's Retry.ShouldRetry and
// PoisonQueueWithFilter.
func Permanent(err error) bool {
	return errors.Is(err, ErrFingerprintMismatch) ||
		errors.Is(err, ErrNoKey) ||
		errors.Is(err, ErrUnreadableResult)
}
