package broker

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Transport is a broker as a router sees it: one publisher, and a
// subscriber per handler, so that each handler consumes independently (its
// own consumer group or queue) while replicas of the service share the
// work. Every topic it is given is prefixed with its topic prefix (see
// [New]).
type Transport struct {
	publisher  message.Publisher
	subscriber func(handler string, inFlight int) (message.Subscriber, error)
	close      func() error
	ready      func(context.Context) error
}

// Parts are what a broker package builds its [Transport] of.
type Parts struct {
	// Publisher is the broker's one publisher, safe for concurrent use.
	Publisher message.Publisher
	// Subscriber returns the subscriber for the named handler, holding up
	// to inFlight messages at once (at least 1), as
	// [Transport.Subscriber] describes.
	Subscriber func(handler string, inFlight int) (message.Subscriber, error)
	// Close closes the subscribers, then the publisher, then the
	// connections; closing twice is harmless.
	Close func() error
	// Ready reports whether the broker can be reached now; nil when there
	// is nothing to reach (in process).
	Ready func(context.Context) error
}

// New returns the transport of parts with topicPrefix prepended to every
// topic it publishes to, subscribes to or initializes (its users keep
// using the plain topic names), and its publisher shared (see
// [Transport.Publisher]).
func New(parts Parts, topicPrefix string) *Transport {
	t := Transport{
		publisher:  sharedPublisher{parts.Publisher},
		subscriber: parts.Subscriber,
		close:      parts.Close,
		ready:      parts.Ready,
	}
	t = withTopicPrefix(t, topicPrefix)
	return &t
}

// Publisher is the transport's one publisher, safe for concurrent use; see
// [sharedPublisher] for why its Close does nothing.
func (t *Transport) Publisher() message.Publisher { return t.publisher }

// Subscriber returns a new subscriber consuming as handler: in its own
// consumer group or queue (see [Names.ConsumerGroup]), shared by every
// replica. Each of its subscriptions hands out up to inFlight messages at
// once, each acked or nacked on its own, in any order: a router runs them
// concurrently. A message is acknowledged to the broker only once the
// router acked it; a nacked one comes back; a subscription that ends (its
// context ended, its subscriber closed) hands back at once what it had
// not finished, and the subscriber's Close returns once its subscriptions'
// channels are closed. The SQL transport holds one message at a time
// whatever inFlight is. inFlight must be at least 1. On the in-process
// transport, closing a subscriber closes the transport's pub/sub. Safe
// for concurrent use; Close closes every subscriber returned.
func (t *Transport) Subscriber(handler string, inFlight int) (message.Subscriber, error) {
	if inFlight < 1 {
		return nil, fmt.Errorf("subscriber of %s: %d messages in flight, want at least 1", handler, inFlight)
	}
	return t.subscriber(handler, inFlight)
}

// Readiness returns the check of whether the broker answers now, within
// its context, on a connection that lasts (see package doc): a check opens
// a new connection only after the last one failed. Nil for the in-process
// transport, which has nothing to reach. Safe for concurrent use.
func (t *Transport) Readiness() func(context.Context) error { return t.ready }

// Close closes the subscribers, then the publisher, then the connections.
// Call it after the router using the transport has stopped.
func (t *Transport) Close() error { return t.close() }
