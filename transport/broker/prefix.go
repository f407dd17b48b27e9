package broker

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
)

// withTopicPrefix returns t with prefix prepended to every topic it
// publishes to or subscribes to. Its users keep using the plain topic
// names.
func withTopicPrefix(t Transport, prefix string) Transport {
	if prefix == "" {
		return t
	}
	subscriber := t.subscriber
	return Transport{
		publisher: prefixedPublisher{t.publisher, prefix},
		subscriber: func(handler string, inFlight int) (message.Subscriber, error) {
			s, err := subscriber(handler, inFlight)
			if err != nil {
				return nil, err
			}
			return prefixSubscriber(s, prefix), nil
		},
		close: t.close,
		ready: t.ready,
	}
}

type prefixedPublisher struct {
	message.Publisher
	prefix string
}

func (p prefixedPublisher) Publish(topic string, msgs ...*message.Message) error {
	return p.Publisher.Publish(p.prefix+topic, msgs...)
}

// prefixSubscriber returns s subscribing to prefix + topic, and
// initializing prefix + topic when s is a [message.SubscribeInitializer]
// (and only then, so that callers asking whether it is one learn what s
// does).
func prefixSubscriber(s message.Subscriber, prefix string) message.Subscriber {
	p := prefixedSubscriber{s, prefix}
	if _, ok := s.(message.SubscribeInitializer); ok {
		return prefixedInitializer{p}
	}
	return p
}

type prefixedSubscriber struct {
	message.Subscriber
	prefix string
}

func (s prefixedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return s.Subscriber.Subscribe(ctx, s.prefix+topic)
}

// prefixedInitializer is a prefixedSubscriber whose subscriber is a
// [message.SubscribeInitializer].
type prefixedInitializer struct{ prefixedSubscriber }

func (s prefixedInitializer) SubscribeInitialize(topic string) error {
	return s.Subscriber.(message.SubscribeInitializer).SubscribeInitialize(s.prefix + topic)
}
