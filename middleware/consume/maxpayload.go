package consume

import (
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
)

// MaxPayload returns a router middleware that refuses a message whose
// payload is larger than limit bytes with an error wrapping
// [ErrPayloadTooLarge], which is [Permanent]: registered inside the poison
// queue, it parks such a message there at once, before any retry or
// record, instead of handing it to the handler. A producer can otherwise
// make every replica decode, fingerprint and store whatever size its
// broker lets through. [Install] registers it when RouterConfig.MaxPayload
// is set.
func MaxPayload(limit int) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			if n := len(msg.Payload); n > limit {
				return nil, fmt.Errorf("message %s: payload of %d bytes, over the limit of %d: %w", msg.UUID, n, limit, ErrPayloadTooLarge)
			}
			return h(msg)
		}
	}
}
