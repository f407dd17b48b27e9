package consume

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
)

// Defaults that [Install] applies to zero fields.
const (
	DefaultPoisonTopic   = "poison"
	DefaultRetries       = 3
	DefaultRetryInterval = 100 * time.Millisecond
	DefaultTimeout       = 10 * time.Second
)

// RouterConfig is what [Install] puts on a [message.Router]. Only Receiver
// is required: with nothing else set, Install adds the receiver, the
// attempt timeout and the middlewares the receiver's guarantees depend
// on, and a failed attempt's error goes to the router's own middlewares
// at once. Retry and Poison add the receiver's own retry and poison
// design, the one the service runs with; a router that has its own keeps
// it.
type RouterConfig struct {
	// Receiver is the idempotent receiver, installed innermost, right
	// around the handler. Required.
	Receiver *receiver.Receiver
	// Options configure the receiver's Watermill face: the key
	// ([WithKey]), the fingerprint ([WithFingerprint]) and, in transaction
	// mode, the outbox ([WithOutbox]).
	Options []Option

	// Retry, when set, retries a failed attempt in process, with
	// exponential backoff, before its error leaves the chain; the
	// permanent errors (Permanent) are not retried. Nil: no retries here.
	Retry *Retry
	// Poison, when set, publishes the messages that can never succeed (the
	// errors Permanent reports) to its topic and acks their delivery. Nil:
	// their errors leave the chain for the router's own poison queue,
	// which [Permanent] (or Permanent here) tells them apart for, such as
	// Watermill's PoisonQueueWithFilter(pub, topic, consume.Permanent).
	// Without any poison queue such a message is redelivered forever.
	Poison *Poison
	// Permanent reports the errors, besides the receiver's own
	// ([Permanent]: a reused key, a missing key, an unreadable stored
	// result), that redelivering the message can never fix, such as a
	// malformed payload (see [PermanentErrors]). Retry does not retry
	// them and Poison parks them. Every other error — a store or database
	// outage, a copy still in progress — is retried and then returned, so
	// the broker redelivers it: nothing is parked during an outage.
	// Default: the receiver's own only.
	Permanent func(error) bool

	// MaxPayload, when positive, is the largest payload, in bytes, a
	// handler is given: a larger message fails at once, permanently, with
	// [ErrPayloadTooLarge], before any retry or record (see [MaxPayload]).
	// Handlers that read Poison's topic get every message: a poisoned
	// message is as large as it came, and refusing it there would poison
	// it again, forever. Zero: no limit.
	MaxPayload int
	// Signer, when set, verifies every message before it is claimed (see
	// [signing.Signer]): one that is unsigned or not signed by one of its
	// secrets fails at once, permanently, with [signing.ErrBadSignature].
	// As with MaxPayload, the messages of Poison's topic are not checked.
	// Nil: messages are not verified, and any producer on a topic may
	// pre-empt its keys (see docs/security.md).
	Signer *signing.Signer

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

	// Outer are middlewares run once per delivery, outside Poison and
	// Retry, in order, right inside the recoverer: metrics, Watermill's
	// CorrelationID, a consumer span (tracecontext.Messages.Consume), logging.
	Outer []message.HandlerMiddleware
	// Inner are middlewares run inside the receiver, in order, right
	// around the handler: only when the handler runs, and what they do to
	// the produced messages is stored with them and replayed to
	// duplicates (tracecontext.Messages.Produce). An Inner middleware must return the
	// handler's error as it came: one that turns a failure into a success
	// completes the record of an effect that did not happen.
	Inner []message.HandlerMiddleware

	// Logger receives the retries' logs: a copy still in progress
	// elsewhere at Info, every other failure at Error. Default
	// slog.Default().
	Logger *slog.Logger
}

// Retry is the receiver's in-process retry (RouterConfig.Retry): each
// attempt on the delivery's context, the backoff doubling from Interval
// up to MaxInterval, stopped once the router closes. Its zero value is
// the default, DefaultRetries retries from DefaultRetryInterval.
type Retry struct {
	// Max is how often a failed attempt is retried. Default
	// DefaultRetries.
	Max int
	// Interval is the first retry's backoff. Default DefaultRetryInterval.
	Interval time.Duration
	// MaxInterval caps the backoff. Default 10 × Interval.
	MaxInterval time.Duration
}

// Poison is the receiver's poison queue (RouterConfig.Poison): Watermill's
// PoisonQueue, filtered to the permanent errors, with the reason in
// metadata "reason_poisoned" and the message's topic in "topic_poisoned".
type Poison struct {
	// Publisher publishes the poisoned messages. Required.
	Publisher message.Publisher
	// Topic is theirs. Default DefaultPoisonTopic.
	Topic string
}

// HandlerConfig is what one handler sets for itself (RouterConfig.Handlers).
type HandlerConfig struct {
	// Receiver, when set, is the handler's own in place of
	// RouterConfig.Receiver: one in the other mode, say, so that a
	// handler whose effect is a write to the database commits it with its
	// record (transaction mode) beside handlers that call other systems
	// (lease mode, with effect keys).
	Receiver *receiver.Receiver
	// Timeout bounds one attempt of the handler, below its receiver's
	// lease as RouterConfig.Timeout. Default RouterConfig.Timeout.
	Timeout time.Duration
	// Options follow RouterConfig.Options, so that the handler's own
	// [WithKey] or [WithFingerprint] wins.
	Options []Option
}

// Install puts the receiver and the middlewares its guarantees depend on
// around every handler of router, outermost first:
//
//	Recoverer     turns a handler's panic into an error (after the receiver
//	              has released the claim);
//	Outer...      once per delivery;
//	poison queue  parks the permanent failures on Poison.Topic and acks
//	              them, when Poison is set;
//	MaxPayload    refuses a payload over RouterConfig.MaxPayload, when set;
//	Signer        refuses a message not signed by RouterConfig.Signer, when
//	              set;
//	KeepContext   hands what is outside the message with its own context;
//	retry         retries the other failures with exponential backoff, when
//	              Retry is set;
//	OutliveClose  lets an attempt in flight when the router closes run to
//	              its end instead of cancelling it between its effect and
//	              its record;
//	timeout       bounds one attempt, within the receiver's lease;
//	receiver      claims the key, runs the handler once, replays duplicates;
//	Inner...      only when the handler runs.
//
// The chain is always the innermost of the router's: Install adds it when
// the router runs, after every middleware the router has then, so a
// middleware added before or after Install — a requeuer, a poison queue,
// a retry, a delay — runs outside the receiver and sees the handler's
// error, and never completes the record of a failed attempt. A handler
// whose chain another middleware joins inside the receiver afterwards
// (one added once the router runs) is refused when it starts: the router
// panics, naming the middleware, before the handler is given a message.
// Install refuses a router already running.
//
// The timeout and the receiver take the settings of the handler that runs
// (RouterConfig.Handlers, by the name in the message's context).
//
// Install refuses a config without a receiver, a negative setting, or a
// timeout that the lease does not outlive. The router publishes the
// produced messages as usual (unless an outbox writes them, see
// [WithOutbox]); add the handlers before or after Install.
func Install(router *message.Router, cfg RouterConfig) error {
	if router == nil {
		return errors.New("missing router")
	}
	if router.IsRunning() {
		return errors.New("the router is running: install the receiver before Run")
	}
	chain, err := cfg.middlewares()
	if err != nil {
		return fmt.Errorf("invalid router config: %w", err)
	}
	innermost := newInnermost(router)
	chain = append(chain, innermost.check)
	router.AddPlugin(func(r *message.Router) error {
		innermost.know(r.Handlers())
		r.AddMiddleware(chain...)
		return nil
	})
	return nil
}

// middlewares returns the chain Install adds, in order, its defaults
// filled.
func (c RouterConfig) middlewares() ([]message.HandlerMiddleware, error) {
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	chain := make([]message.HandlerMiddleware, 0, len(c.Outer)+len(c.Inner)+8)
	chain = append(chain, middleware.Recoverer)
	chain = append(chain, c.Outer...)
	if c.Poison != nil {
		poison, err := middleware.PoisonQueueWithFilter(c.Poison.Publisher, c.Poison.Topic, c.permanent)
		if err != nil {
			return nil, err
		}
		chain = append(chain, poison)
	}
	if c.MaxPayload > 0 {
		chain = append(chain, c.exceptPoison(MaxPayload(c.MaxPayload)))
	}
	if c.Signer != nil {
		chain = append(chain, c.exceptPoison(c.Signer.Middleware))
	}
	chain = append(chain, KeepContext)
	if c.Retry != nil {
		chain = append(chain, middleware.Retry{
			MaxRetries:          c.Retry.Max,
			InitialInterval:     c.Retry.Interval,
			MaxInterval:         c.Retry.MaxInterval,
			Multiplier:          2,
			ShouldRetry:         func(p middleware.RetryParams) bool { return !c.permanent(p.Err) },
			ResetContextOnRetry: true, // else each retry inherits the timed-out context
			Logger:              NewLogger(c.Logger),
		}.Middleware)
	}
	chain = append(chain, OutliveClose, c.perHandler)
	return chain, nil
}

// exceptPoison is check for every message but those of the poison topic:
// refusing a poisoned message would poison it again, forever.
func (c RouterConfig) exceptPoison(check message.HandlerMiddleware) message.HandlerMiddleware {
	if c.Poison == nil {
		return check
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		checked := check(h)
		return func(msg *message.Message) ([]*message.Message, error) {
			if message.SubscribeTopicFromCtx(msg.Context()) == c.Poison.Topic {
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
		f = Middleware(cmp.Or(hc.Receiver, c.Receiver), append(slices.Clip(c.Options), hc.Options...)...)(f)
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
	if c.Retry != nil {
		r := *c.Retry
		if r.Max == 0 {
			r.Max = DefaultRetries
		}
		if r.Interval == 0 {
			r.Interval = DefaultRetryInterval
		}
		if r.MaxInterval == 0 {
			r.MaxInterval = 10 * r.Interval
		}
		c.Retry = &r
	}
	if c.Poison != nil {
		p := *c.Poison
		if p.Topic == "" {
			p.Topic = DefaultPoisonTopic
		}
		c.Poison = &p
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
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
	if c.Poison != nil && c.Poison.Publisher == nil {
		errs = append(errs, errors.New("poison: missing publisher"))
	}
	if c.MaxPayload < 0 {
		errs = append(errs, fmt.Errorf("max payload %d must be zero (no limit) or more", c.MaxPayload))
	}
	if r := c.Retry; r != nil && (r.Max < 0 || r.Interval < 0 || r.MaxInterval < 0) {
		errs = append(errs, fmt.Errorf("retry: max %d, interval %v and its cap %v must be positive (nil Retry: no retries)", r.Max, r.Interval, r.MaxInterval))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v must be positive", c.Timeout))
	}
	if c.Receiver != nil && c.Timeout >= c.Receiver.Lease() {
		errs = append(errs, fmt.Errorf("timeout %v must be below the receiver's lease %v: a lease that ends while its attempt runs lets a duplicate in",
			c.Timeout, c.Receiver.Lease()))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		hc := c.Handlers[name]
		r := cmp.Or(hc.Receiver, c.Receiver)
		switch {
		case hc.Timeout < 0:
			errs = append(errs, fmt.Errorf("handler %s: timeout %v must be positive", name, hc.Timeout))
		case r != nil && hc.Timeout >= r.Lease():
			errs = append(errs, fmt.Errorf("handler %s: timeout %v must be below the receiver's lease %v: a lease that ends while its attempt runs lets a duplicate in",
				name, hc.Timeout, r.Lease()))
		}
	}
	return errors.Join(errs...)
}

// permanent is Permanent or Config.Permanent.
func (c RouterConfig) permanent(err error) bool {
	return Permanent(err) || c.Permanent != nil && c.Permanent(err)
}
