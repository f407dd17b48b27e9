package consume

import (
	"errors"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
)

// ErrPayloadTooLarge means a message's payload exceeds the limit of
// [MaxPayload]. Redelivery cannot fix it: see [Permanent].
var ErrPayloadTooLarge = errors.New("payload_too_large: message payload over the limit")

// Permanent reports whether err is one that redelivering the same message
// can never fix: a fingerprint mismatch, a missing key, an unreadable
// stored result ([receiver.ErrFingerprintMismatch], [receiver.ErrNoKey],
// [receiver.ErrUnreadableResult]), a payload over the limit
// ([ErrPayloadTooLarge]), a bad signature ([signing.ErrBadSignature]), a
// message that failed after its last requeue ([ErrRetriesExhausted]).
// Use it to skip retries and to route such messages to a poison queue, for
// example with watermill's Retry.ShouldRetry and PoisonQueueWithFilter;
// [Install] does.
func Permanent(err error) bool {
	return errors.Is(err, receiver.ErrFingerprintMismatch) ||
		errors.Is(err, receiver.ErrNoKey) ||
		errors.Is(err, receiver.ErrUnreadableResult) ||
		errors.Is(err, ErrPayloadTooLarge) ||
		errors.Is(err, ErrRetriesExhausted) ||
		errors.Is(err, signing.ErrBadSignature)
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
