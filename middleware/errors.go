package middleware

import (
	"errors"

	"github.com/onceflow/onceflow/stores"
)

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

	// ErrPayloadTooLarge means a message's payload exceeds the limit of
	// [MaxPayload]. Redelivery cannot fix it: see Permanent.
	ErrPayloadTooLarge = errors.New("payload_too_large: message payload over the limit")

	// ErrBadSignature means a message is unsigned, or not signed by a
	// secret of the [Signer] that checks it. Redelivery cannot fix it: see
	// Permanent.
	ErrBadSignature = errors.New("bad_signature: message not signed by a trusted producer")
)

// errNotStored, wrapped in the error of the function passed to Execute,
// says that the function succeeded but its result must not be recorded:
// Execute releases the claim and reports OutcomeNotStored.
var errNotStored = errors.New("result not stored")

// Permanent reports whether err is one that redelivering the same message
// can never fix: a fingerprint mismatch, a missing key, an unreadable
// stored result, a payload over the limit, a bad signature. Use it to skip
// retries and to route such messages to a poison queue, for example with
// watermill's Retry.ShouldRetry and PoisonQueueWithFilter.
func Permanent(err error) bool {
	return errors.Is(err, ErrFingerprintMismatch) ||
		errors.Is(err, ErrNoKey) ||
		errors.Is(err, ErrUnreadableResult) ||
		errors.Is(err, ErrPayloadTooLarge) ||
		errors.Is(err, ErrBadSignature)
}

// PermanentErrors returns a classifier reporting whether an error is one
// that redelivery can never fix: [Permanent], or one matching (errors.Is)
// any of errs — a domain's own sentinels, such as the error its decoders
// wrap a malformed payload in. Use it as RouterConfig.Permanent.
func PermanentErrors(errs ...error) func(error) bool {
	errs = append([]error(nil), errs...)
	return func(err error) bool {
		if Permanent(err) {
			return true
		}
		for _, e := range errs {
			if errors.Is(err, e) {
				return true
			}
		}
		return false
	}
}

// shown is how a key appears in errors and logs: as the stores keep it (see
// [stores.StorageKey]), so a long or binary key becomes its short hash. An
// error's text travels on as the poison topic's reason_poisoned metadata, a
// broker header: a key of any size a producer sends must not multiply into
// it (RabbitMQ refuses headers over its frame size, and the poisoned message
// would be redelivered forever).
func shown(k string) string {
	if s, err := stores.StorageKey(k); err == nil {
		return s
	}
	return k
}
