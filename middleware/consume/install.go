package consume

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
)

// Defaults that [Install] applies to zero RouterConfig fields: the
// service's own.
const (
	DefaultPoisonTopic   = "poison"
	DefaultRetries       = 3
	DefaultRetryInterval = 100 * time.Millisecond
	DefaultTimeout       = 10 * time.Second
)

// NoRetries as RouterConfig.Retries turns the in-process retries off: a
// failed attempt is nacked at once.
const NoRetries = -1

// RouterConfig is what [Install] puts on a [message.Router]. Its zero
// value, once Receiver and PoisonPublisher are set, is the configuration
// the service runs with.
type RouterConfig struct {
	// Receiver is the idempotent receiver, installed innermost, right
	// around the handler (see [Middleware]). Required.
	Receiver *receiver.Receiver
	// Options configure the receiver's Watermill face: the key
	// ([WithKey]), the fingerprint ([WithFingerprint]) and, in transaction
	// mode, the outbox ([WithOutbox]).
	Options []Option

	// PoisonPublisher publishes the messages that can never succeed to
	// PoisonTopic, with the reason in metadata "reason_poisoned" and their
	// topic in "topic_poisoned" (Watermill's PoisonQueue); their delivery
	// is then acked. Required: without a poison queue such a message would
	// be redelivered forever.
	PoisonPublisher message.Publisher
	// PoisonTopic is the topic of the poisoned messages. Default
	// DefaultPoisonTopic.
	PoisonTopic string
	// Permanent reports the errors, besides the receiver's own
	// ([Permanent]: a reused key, a missing key, an unreadable stored
	// result), that redelivering the message can never fix, such as a
	// malformed payload (see [PermanentErrors]). Those skip the retries and
	// go to the poison topic. Every other error — a store or database
	// outage, a copy still in progress — is retried in process and then
	// nacked, so the broker redelivers it: nothing is parked in the poison
	// topic during an outage. Default: the receiver's own only.
	Permanent func(error) bool

	// MaxPayload, when positive, is the largest payload, in bytes, a
	// handler is given: a larger message goes to PoisonTopic at once, its
	// reason wrapping [ErrPayloadTooLarge], before any retry or record
	// (see [MaxPayload]). Handlers that read PoisonTopic itself get every
	// message: a poisoned message is as large as it came, and refusing it
	// there would poison it again, forever. Zero: no limit.
	MaxPayload int

	// Signer, when set, verifies every message before it is claimed (see
	// [signing.Signer]): one that is unsigned or not signed by one of its
	// secrets goes to PoisonTopic at once, its reason wrapping
	// [signing.ErrBadSignature].
	// As with MaxPayload, the messages of PoisonTopic itself are not
	// checked. Nil: messages are not verified, and any producer on a topic
	// may pre-empt its keys (see docs/security.md).
	Signer *signing.Signer

	// Retries is how often a failed attempt is retried in process, with
	// exponential backoff, before the message is nacked. Default
	// DefaultRetries; NoRetries for none.
	Retries int
	// RetryInterval is the first retry's backoff; it doubles on each
	// retry. Default DefaultRetryInterval.
	RetryInterval time.Duration
	// RetryMaxInterval caps the backoff. Default 10 × RetryInterval.
	RetryMaxInterval time.Duration
	// Timeout bounds one attempt: its context is cancelled after this
	// long. It must be below the receiver's lease
	// ([receiver.Receiver.Lease]), or a slow attempt's key could be taken
	// over while it runs. Default DefaultTimeout.
	Timeout time.Duration
	// Handlers are settings of single handlers, by handler name, in place
	// of Timeout and in addition to Options: a key or fingerprint
	// of the handler's own, or a longer timeout. Handlers not named here
	// run with the router's.
	Handlers map[string]HandlerConfig

	// Outer are middlewares run once per delivery, outside the poison
	// queue and the retries, in order, right inside the recoverer: metrics,
	// Watermill's CorrelationID, a consumer span ([Tracing.Consume]),
	// logging.
	Outer []message.HandlerMiddleware
	// Inner are middlewares run inside the receiver, in order, right
	// around the handler: only when the handler runs, and what they do to
	// the produced messages is stored with them and replayed to
	// duplicates ([Tracing.Produce]).
	Inner []message.HandlerMiddleware

	// Logger receives the retries' logs. Default: none.
	Logger watermill.LoggerAdapter
}

// HandlerConfig is what one handler sets for itself (RouterConfig.Handlers).
type HandlerConfig struct {
	// Timeout bounds one attempt of the handler, below the receiver's
	// lease as RouterConfig.Timeout. Default RouterConfig.Timeout.
	Timeout time.Duration
	// Options follow RouterConfig.Options, so that the handler's own
	// [WithKey] or [WithFingerprint] wins.
	Options []Option
}

// Install adds the receiver and the middlewares its guarantees depend on to
// router, for every handler, outermost first:
//
//	Recoverer     turns a handler's panic into an error (after the receiver
//	              has released the claim);
//	Outer...      once per delivery;
//	poison queue  parks the permanent failures (RouterConfig.Permanent) on
//	              PoisonTopic and acks them;
//	MaxPayload    refuses a payload over RouterConfig.MaxPayload, when set;
//	Signer        refuses a message not signed by RouterConfig.Signer, when
//	              set;
//	KeepContext   hands the poison queue the message with its own context;
//	retry         retries the other failures with exponential backoff, each
//	              attempt on the delivery's context (ResetContextOnRetry),
//	              and stops once the router closes;
//	OutliveClose  lets an attempt in flight when the router closes run to
//	              its end instead of cancelling it between its effect and
//	              its record;
//	timeout       bounds one attempt, within the receiver's lease;
//	receiver      claims the key, runs the handler once, replays duplicates;
//	Inner...      only when the handler runs.
//
// The timeout and the receiver take the settings of the handler that runs
// (RouterConfig.Handlers, by the name in the message's context).
//
// Install refuses a config without a receiver or a poison publisher, a
// negative setting, or a timeout that the lease does not outlive. The
// router publishes the produced messages as usual (unless an outbox writes
// them, see [WithOutbox]); add the handlers before or after Install.
func Install(router *message.Router, cfg RouterConfig) error {
	if router == nil {
		return errors.New("missing router")
	}
	chain, err := cfg.middlewares()
	if err != nil {
		return fmt.Errorf("invalid router config: %w", err)
	}
	router.AddMiddleware(chain...)
	return nil
}

// middlewares returns the chain Install adds, in order, its defaults
// filled.
func (c RouterConfig) middlewares() ([]message.HandlerMiddleware, error) {
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	poison, err := middleware.PoisonQueueWithFilter(c.PoisonPublisher, c.PoisonTopic, c.permanent)
	if err != nil {
		return nil, err
	}
	chain := make([]message.HandlerMiddleware, 0, len(c.Outer)+len(c.Inner)+8)
	chain = append(chain, middleware.Recoverer)
	chain = append(chain, c.Outer...)
	chain = append(chain, poison)
	if c.MaxPayload > 0 {
		chain = append(chain, c.exceptPoison(MaxPayload(c.MaxPayload)))
	}
	if c.Signer != nil {
		chain = append(chain, c.exceptPoison(c.Signer.Middleware))
	}
	chain = append(chain,
		KeepContext,
		middleware.Retry{
			MaxRetries:          max(c.Retries, 0),
			InitialInterval:     c.RetryInterval,
			MaxInterval:         c.RetryMaxInterval,
			Multiplier:          2,
			ShouldRetry:         func(p middleware.RetryParams) bool { return !c.permanent(p.Err) },
			ResetContextOnRetry: true, // else each retry inherits the timed-out context
			Logger:              c.Logger,
		}.Middleware,
		OutliveClose,
		c.perHandler,
	)
	return chain, nil
}

// exceptPoison is check for every message but those of c.PoisonTopic:
// refusing a poisoned message would poison it again, forever.
func (c RouterConfig) exceptPoison(check message.HandlerMiddleware) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		checked := check(h)
		return func(msg *message.Message) ([]*message.Message, error) {
			if message.SubscribeTopicFromCtx(msg.Context()) == c.PoisonTopic {
				return h(msg)
			}
			return checked(msg)
		}
	}
}

// perHandler is the timeout, the receiver and Inner around h, with the
// settings of the handler whose message it is.
func (c RouterConfig) perHandler(h message.HandlerFunc) message.HandlerFunc {
	around := func(hc HandlerConfig) message.HandlerFunc {
		f := h
		for i := len(c.Inner) - 1; i >= 0; i-- {
			f = c.Inner[i](f)
		}
		f = Middleware(c.Receiver, append(slices.Clip(c.Options), hc.Options...)...)(f)
		return middleware.Timeout(hc.Timeout)(f)
	}
	shared := around(HandlerConfig{Timeout: c.Timeout})
	if len(c.Handlers) == 0 {
		return shared
	}
	own := make(map[string]message.HandlerFunc, len(c.Handlers))
	for name, hc := range c.Handlers {
		own[name] = around(hc)
	}
	return func(msg *message.Message) ([]*message.Message, error) {
		if f, ok := own[message.HandlerNameFromCtx(msg.Context())]; ok {
			return f(msg)
		}
		return shared(msg)
	}
}

func (c *RouterConfig) setDefaults() {
	if c.PoisonTopic == "" {
		c.PoisonTopic = DefaultPoisonTopic
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.RetryMaxInterval == 0 {
		c.RetryMaxInterval = 10 * c.RetryInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	handlers := make(map[string]HandlerConfig, len(c.Handlers))
	for name, hc := range c.Handlers {
		if hc.Timeout == 0 {
			hc.Timeout = c.Timeout
		}
		handlers[name] = hc
	}
	c.Handlers = handlers
}

func (c RouterConfig) validate() error {
	var errs []error
	if c.Receiver == nil {
		errs = append(errs, errors.New("missing receiver"))
	}
	if c.PoisonPublisher == nil {
		errs = append(errs, errors.New("missing poison publisher"))
	}
	if c.MaxPayload < 0 {
		errs = append(errs, fmt.Errorf("max payload %d must be zero (no limit) or more", c.MaxPayload))
	}
	if c.Retries < NoRetries {
		errs = append(errs, fmt.Errorf("retries %d must be NoRetries (-1) or more", c.Retries))
	}
	if c.RetryInterval < 0 || c.RetryMaxInterval < 0 {
		errs = append(errs, fmt.Errorf("retry interval %v and its cap %v must be positive", c.RetryInterval, c.RetryMaxInterval))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v must be positive", c.Timeout))
	}
	if c.Receiver != nil && c.Timeout >= c.Receiver.Lease() {
		errs = append(errs, fmt.Errorf("timeout %v must be below the receiver's lease %v: a lease that ends while its attempt runs lets a duplicate in",
			c.Timeout, c.Receiver.Lease()))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		t := c.Handlers[name].Timeout
		switch {
		case t < 0:
			errs = append(errs, fmt.Errorf("handler %s: timeout %v must be positive", name, t))
		case c.Receiver != nil && t >= c.Receiver.Lease():
			errs = append(errs, fmt.Errorf("handler %s: timeout %v must be below the receiver's lease %v: a lease that ends while its attempt runs lets a duplicate in",
				name, t, c.Receiver.Lease()))
		}
	}
	return errors.Join(errs...)
}

// permanent is Permanent or Config.Permanent.
func (c RouterConfig) permanent(err error) bool {
	return Permanent(err) || c.Permanent != nil && c.Permanent(err)
}
