package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/delay"
	"github.com/ThreeDotsLabs/watermill/components/requeuer"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// Requeue sends a message whose attempt failed with an error that is not
// permanent back through the broker after a delay, for the handlers that
// ask for it (HandlerConfig.Requeue), instead of the broker redelivering
// it at once. The handler's lane goes on with the next message while the
// failed one waits on the requeue topic, so a slow dependency does not
// hold the lane with in-process retries. RouterConfig.Requeue.
//
// A requeued message goes out as it came — its UUID, key, payload and
// signature — with Watermill's delay metadata (components/delay) and a
// count of its requeues (components/requeuer's RetriesKey). Its record was
// released when its attempt failed, so its next copy runs the handler. One
// that fails after Max requeues fails with [ErrRetriesExhausted], which is
// permanent: the poison queue parks it.
type Requeue struct {
	// Publisher publishes to Topic, and back to the handlers' topics.
	// Required.
	Publisher message.Publisher
	// Subscriber reads Topic. Required.
	Subscriber message.Subscriber
	// Topic is the requeue topic. Default DefaultRequeueTopic.
	Topic string
	// Topics are those a requeued message may go back to: the handlers'.
	// Required.
	Topics []string
}

// DefaultRequeueTopic is Requeue.Topic by default.
const DefaultRequeueTopic = "requeue"

// RequeuePolicy is how one handler's messages are requeued
// (HandlerConfig.Requeue).
type RequeuePolicy struct {
	// Delay is how long a failed message waits before it is handed to the
	// handler again. Required.
	Delay time.Duration
	// Max is how many times a message is requeued before it is poisoned
	// with ErrRetriesExhausted. Required.
	Max int
}

// ErrRetriesExhausted is the error of a message that failed after its
// handler's RequeuePolicy.Max requeues: permanent (see [Permanent]).
var ErrRetriesExhausted = errors.New("retries_exhausted: the message failed after every requeue")

// RequeueTopicKey is the metadata field of a requeued message that names
// the topic it goes back to.
const RequeueTopicKey = "requeue_topic"

// requeue sends the transient failures of the handlers with a policy to
// r.Topic, and turns the failure after their last requeue into
// ErrRetriesExhausted.
func (r *Requeue) requeue(policies map[string]RequeuePolicy, permanent func(error) bool) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			p, ok := policies[message.HandlerNameFromCtx(msg.Context())]
			if err == nil || !ok || permanent(err) {
				return out, err
			}
			n, _ := strconv.Atoi(msg.Metadata.Get(requeuer.RetriesKey))
			if n >= p.Max {
				return nil, fmt.Errorf("%w (%d requeues): %w", ErrRetriesExhausted, n, err)
			}
			again := msg.Copy()
			again.Metadata.Set(RequeueTopicKey, message.SubscribeTopicFromCtx(msg.Context()))
			delay.Message(again, delay.For(p.Delay))
			again.SetContext(msg.Context())
			if perr := r.Publisher.Publish(r.Topic, again); perr != nil {
				return nil, fmt.Errorf("%w (and requeueing it failed: %w)", err, perr)
			}
			return nil, nil
		}
	}
}

func (r *Requeue) validate(poisoned bool) error {
	var errs []error
	if r.Publisher == nil || r.Subscriber == nil {
		errs = append(errs, errors.New("requeue: missing publisher or subscriber"))
	}
	if !poisoned {
		errs = append(errs, errors.New("requeue needs Poison: a message that fails after its last requeue is poisoned"))
	}
	if len(r.Topics) == 0 {
		errs = append(errs, errors.New("requeue: no topics to requeue to"))
	}
	return errors.Join(errs...)
}

// install adds the requeue topic's handler to router: Watermill's
// requeuer, publishing each message back to its topic once its delay is
// over. A message that names a topic not in Topics (one published
// straight to the requeue topic) goes to the poison topic instead.
func (r *Requeue) install(router *message.Router, poison *Poison, logger watermill.LoggerAdapter) error {
	_, err := requeuer.NewRequeuer(requeuer.Config{
		Subscriber:     r.Subscriber,
		SubscribeTopic: r.Topic,
		Publisher:      delayedPublisher{r.Publisher},
		Router:         router,
		GeneratePublishTopic: func(p requeuer.GeneratePublishTopicParams) (string, error) {
			topic := p.Message.Metadata.Get(RequeueTopicKey)
			if !slices.Contains(r.Topics, topic) {
				p.Message.Metadata.Set(middleware.ReasonForPoisonedKey, fmt.Sprintf("requeued to %q, a topic the service does not consume", topic))
				p.Message.Metadata.Set(middleware.PoisonedTopicKey, topic)
				p.Message.Metadata.Set(PoisonClassKey, ClassPermanent)
				return poison.Topic, nil
			}
			return topic, nil
		},
	}, logger)
	return err
}

// delayedPublisher publishes each message once the time in its delay
// metadata has come, or at once when it has none.
type delayedPublisher struct{ message.Publisher }

func (p delayedPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		if err := waitUntil(msg.Context(), msg.Metadata.Get(delay.DelayedUntilKey)); err != nil {
			return err
		}
	}
	return p.Publisher.Publish(topic, msgs...)
}

// waitUntil waits until the RFC 3339 time until, if it is one and ahead.
func waitUntil(ctx context.Context, until string) error {
	at, err := time.Parse(time.RFC3339, until)
	if err != nil {
		return nil
	}
	wait := time.Until(at)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
