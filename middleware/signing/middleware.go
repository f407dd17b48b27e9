package signing

import "github.com/ThreeDotsLabs/watermill/message"

// Publisher returns pub signing every message, as it is published, for
// the topic it is published to after Config.TopicPrefix: the topic on the
// broker when pub is a transport that prepends that prefix. A nil Signer
// returns pub itself.
func (s *Signer) Publisher(pub message.Publisher) message.Publisher {
	if s == nil {
		return pub
	}
	return signingPublisher{Publisher: pub, s: s}
}

type signingPublisher struct {
	message.Publisher
	s *Signer
}

func (p signingPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		p.s.Sign(p.s.prefix+topic, msg)
	}
	return p.Publisher.Publish(topic, msgs...)
}

// Middleware verifies each message against the topic the handler consumes
// it from ([message.SubscribeTopicFromCtx], the topic as the router names
// it) after Config.TopicPrefix, before h runs: a message that fails
// [Signer.Verify] returns its error and h never sees it.
func (s *Signer) Middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		if err := s.Verify(s.prefix+message.SubscribeTopicFromCtx(msg.Context()), msg); err != nil {
			return nil, err
		}
		return h(msg)
	}
}
