package consume

import (
	"errors"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
)

// PoisonClassKey is the metadata field in which Poison says what kind of
// error poisoned a message, one of the Class constants, beside Watermill's
// reason_poisoned (the error itself).
const PoisonClassKey = "class_poisoned"

// The kinds of error that poison a message (metadata PoisonClassKey).
const (
	// ClassMalformed: the payload does not decode (Poison.Malformed).
	ClassMalformed = "malformed"
	// ClassBadSignature: [signing.ErrBadSignature].
	ClassBadSignature = "bad_signature"
	// ClassKeyReused: [receiver.ErrFingerprintMismatch].
	ClassKeyReused = "key_reused"
	// ClassTooLarge: [ErrPayloadTooLarge].
	ClassTooLarge = "payload_too_large"
	// ClassRetriesExhausted: [ErrRetriesExhausted], a transient failure
	// after the handler's every requeue.
	ClassRetriesExhausted = "retries_exhausted"
	// ClassPermanent: any other permanent error.
	ClassPermanent = "permanent"
)

// class is the kind of the permanent error err.
func (p *Poison) class(err error) string {
	switch {
	case errors.Is(err, signing.ErrBadSignature):
		return ClassBadSignature
	case errors.Is(err, receiver.ErrFingerprintMismatch):
		return ClassKeyReused
	case errors.Is(err, ErrPayloadTooLarge):
		return ClassTooLarge
	case errors.Is(err, ErrRetriesExhausted):
		return ClassRetriesExhausted
	case p.Malformed != nil && p.Malformed(err):
		return ClassMalformed
	}
	return ClassPermanent
}

// classify writes the class of a permanent failure into its message's
// metadata, for the poison queue outside it to publish with the message.
func (p *Poison) classify(permanent func(error) bool) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil && permanent(err) {
				msg.Metadata.Set(PoisonClassKey, p.class(err))
			}
			return out, err
		}
	}
}
