package consume

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
)

// OutliveClose is a router middleware that runs the attempt inside it on a
// context that the [message.Router]'s Close does not cancel (the same
// values, no cancellation, no deadline), then gives the message its context
// back.
//
// Watermill cancels every message's context as the router starts closing. A
// handler cancelled between its side effect and its answer (a row the
// database committed while the client gave up waiting for it) fails, is
// released and runs again on another replica: a second effect from a
// graceful shutdown. With OutliveClose the attempt in flight runs to its
// end instead; a timeout inside it still bounds the attempt, and the router
// waits for it up to its RouterConfig.CloseTimeout. Register it inside the
// retry, so that the retry keeps the cancellable context and stops retrying
// once the router closes, and outside the timeout; [Install] does.
func OutliveClose(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		defer msg.SetContext(ctx)
		msg.SetContext(context.WithoutCancel(ctx))
		return h(msg)
	}
}
