package receiver

import (
	"errors"

	"github.com/onceflow/onceflow/stores"
)

// Errors returned by Execute. Test them with errors.Is.
var (
	// ErrInProgress means another owner is processing the key. Retrying
	// later is safe: the transport should redeliver.
	ErrInProgress = errors.New("in_progress: key is being processed by another owner")

	// ErrFingerprintMismatch means the key was first used for a different
	// payload. Execute returns it wrapped with the key. Redelivery cannot
	// fix it.
	ErrFingerprintMismatch = errors.New("fingerprint_mismatch: idempotency key reused with a different payload")

	// ErrNoKey means no idempotency key (or no scope) could be derived.
	// Redelivery cannot fix it.
	ErrNoKey = errors.New("no idempotency key")

	// ErrUnreadableResult means a stored result could not be decoded, so a
	// duplicate cannot be answered: the faces wrap it when their stored
	// results do not decode. Redelivery cannot fix it.
	ErrUnreadableResult = errors.New("unreadable stored result")
)

// OutcomeError is an error the function passed to [Receiver.Execute]
// returns to end its call in an outcome of its face's own instead of
// [OutcomeFailed]. Execute finds it with errors.As and returns the
// function's error as it is.
//
//   - [OutcomeNotStored]: the function succeeded but its result must not
//     be recorded (the HTTP face: a response over its limit). The claim is
//     released as a failure's, so a retry runs the function again; in
//     transaction mode the unit commits without a record, since the result
//     has reached its client.
//   - [OutcomeRateLimited]: the face refused to create a record (the HTTP
//     face: a client over its quota). The claim is released as a
//     failure's.
//
// Any other Outcome ends the call in OutcomeFailed.
type OutcomeError struct {
	Outcome Outcome
	Err     error
}

func (e *OutcomeError) Error() string { return e.Err.Error() }

// Unwrap returns the error the outcome was given for.
func (e *OutcomeError) Unwrap() error { return e.Err }

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
