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
	// errors Permanent reports) to its topic and acks their delivery; the
	// handlers that read that topic get each of its messages as it is,
	// inside the recoverer and Outer only: no check, retry, timeout or
	// record, so a poisoned message is never claimed nor poisoned again.
	// Nil:
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
	// [signing.Signer]): one that is unsigned, not signed by one of its
	// secrets for the topic it came on (as it is on the broker, prefix
	// included), or signed longer ago than its MaxAge fails at once,
	// permanently, with [signing.ErrBadSignature].
	// As with MaxPayload, the messages of Poison's topic are not checked.
	// Nil: messages are not verified, and any producer on a topic may
	// pre-empt its keys (see docs/security.md).
	Signer *signing.Signer
	// Requeue, when set, sends the transient failures of the handlers
	// whose HandlerConfig.Requeue asks for it back through the broker
	// after a delay (see [Requeue]), and reads its topic as the poison
	// topic is read: outside the chain. Nil: no handler may ask.
	Requeue *Requeue

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
// metadata "reason_poisoned", its kind in [PoisonClassKey] and the
// message's topic in "topic_poisoned".
type Poison struct {
	// Publisher publishes the poisoned messages. Required.
	Publisher message.Publisher
	// Topic is theirs. Default DefaultPoisonTopic.
	Topic string
	// Malformed reports the permanent errors of a payload that does not
	// decode, which are parked with class malformed (metadata
	// PoisonClassKey). Nil: none.
	Malformed func(error) bool
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
	// Requeue, when set, requeues the handler's transient failures after
	// its in-process retries, through RouterConfig.Requeue.
	Requeue *RequeuePolicy
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
// With Poison set, a message of its topic skips everything between Outer
// and the handler: the readers of the poison topic log and count what is
// parked, and must neither claim it (a second message of one key would be
// a fingerprint mismatch) nor poison it again.
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
	guard, err := cfg.guard()
	if err != nil {
		return fmt.Errorf("invalid router config: %w", err)
	}
	cfg.setDefaults()
	if cfg.Requeue != nil {
		if err := cfg.Requeue.install(router, cfg.Poison, NewLogger(cfg.Logger)); err != nil {
			return fmt.Errorf("requeue: %w", err)
		}
	}
	innermost := newInnermost(router)
	router.AddPlugin(func(r *message.Router) error {
		innermost.know(r.Handlers())
		r.AddMiddleware(func(h message.HandlerFunc) message.HandlerFunc { return guard(innermost.check(h)) })
		return nil
	})
	return nil
}

// guard returns what Install puts around each handler function, its
// defaults filled: the chain, and with Poison set a way around it for the
// messages of the poison topic.
func (c RouterConfig) guard() (message.HandlerMiddleware, error) {
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	outer := append([]message.HandlerMiddleware{middleware.Recoverer}, c.Outer...)
	var guarded []message.HandlerMiddleware
	if c.Poison != nil {
		poison, err := middleware.PoisonQueueWithFilter(c.Poison.Publisher, c.Poison.Topic, c.permanent)
		if err != nil {
			return nil, err
		}
		guarded = append(guarded, poison, c.Poison.classify(c.permanent))
	}
	if c.Requeue != nil {
		guarded = append(guarded, c.Requeue.requeue(c.requeuePolicies(), c.permanent))
	}
	if c.MaxPayload > 0 {
		guarded = append(guarded, MaxPayload(c.MaxPayload))
	}
	if c.Signer != nil {
		guarded = append(guarded, c.Signer.Middleware)
	}
	guarded = append(guarded, KeepContext)
	if c.Retry != nil {
		guarded = append(guarded, middleware.Retry{
			MaxRetries:          c.Retry.Max,
			InitialInterval:     c.Retry.Interval,
			MaxInterval:         c.Retry.MaxInterval,
			Multiplier:          2,
			ShouldRetry:         func(p middleware.RetryParams) bool { return !c.permanent(p.Err) },
			ResetContextOnRetry: true, // else each retry inherits the timed-out context
			Logger:              NewLogger(c.Logger),
		}.Middleware)
	}
	guarded = append(guarded, OutliveClose, c.perHandler)
	return func(h message.HandlerFunc) message.HandlerFunc {
		all := wrap(h, append(slices.Clip(outer), guarded...))
		if c.Poison == nil {
			return all
		}
		// A reader of the poison topic gets every message as it is, once:
		// claiming it would make a second message of one key a fingerprint
		// mismatch, which the poison queue would park again, forever, and
		// refusing one (its size, its signature) would poison it again too.
		read := wrap(h, outer)
		return func(msg *message.Message) ([]*message.Message, error) {
			if topic := message.SubscribeTopicFromCtx(msg.Context()); topic == c.Poison.Topic || c.Requeue != nil && topic == c.Requeue.Topic {
				return read(msg)
			}
			return all(msg)
		}
	}, nil
}

// wrap is h inside mws, the first outermost.
func wrap(h message.HandlerFunc, mws []message.HandlerMiddleware) message.HandlerFunc {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// perHandler is the timeout, the receiver and Inner around h, with the
// settings of the handler whose message it is.
func (c RouterConfig) perHandler(h message.HandlerFunc) message.HandlerFunc {
	around := func(hc HandlerConfig) message.HandlerFunc {
		f := wrap(h, c.Inner)
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
	if c.Requeue != nil {
		r := *c.Requeue
		if r.Topic == "" {
			r.Topic = DefaultRequeueTopic
		}
		c.Requeue = &r
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
	if c.Requeue != nil {
		errs = append(errs, c.Requeue.validate(c.Poison != nil))
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
		if p := hc.Requeue; p != nil && (p.Delay <= 0 || p.Max <= 0 || c.Requeue == nil) {
			errs = append(errs, fmt.Errorf("handler %s: requeue needs a positive delay (%v) and max (%d), and RouterConfig.Requeue", name, p.Delay, p.Max))
		}
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

// requeuePolicies are the handlers' requeue policies, by handler name.
func (c RouterConfig) requeuePolicies() map[string]RequeuePolicy {
	ps := map[string]RequeuePolicy{}
	for name, hc := range c.Handlers {
		if hc.Requeue != nil {
			ps[name] = *hc.Requeue
		}
	}
	return ps
}

// permanent is Permanent or Config.Permanent.
func (c RouterConfig) permanent(err error) bool {
	return Permanent(err) || c.Permanent != nil && c.Permanent(err)
}
