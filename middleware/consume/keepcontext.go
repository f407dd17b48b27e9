package consume

import "github.com/ThreeDotsLabs/watermill/message"

// KeepContext is a router middleware that gives the [message.Message] back
// the context it came with once the middlewares inside it return.
//
// Watermill's Timeout cancels the context it sets on the message and leaves
// it there. A poison queue outside it would then publish the message with
// that cancelled context, which publishers that honour it (AMQP, SQL)
// refuse: the message would be nacked and loop at the head of its queue
// forever. Register it right inside the poison queue, outside the retry and
// the timeout; [Install] does.
func KeepContext(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		defer msg.SetContext(ctx)
		return h(msg)
	}
}
