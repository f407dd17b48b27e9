package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware"
)

// PoisonTopic receives messages that redelivery can never fix, with the
// reason in metadata "reason_poisoned" and their topic in "topic_poisoned".
const PoisonTopic = "poison"

// routerParts is what newRouter assembles.
type routerParts struct {
	cfg       Config
	transport broker
	receiver  *middleware.Receiver
	// outbox, in DEDUP_MODE=transaction, writes the handlers' produced
	// messages inside their unit of work instead of the router publishing
	// them; nil in lease mode.
	outbox middleware.Outbox
	routes domain.Routes
	// permanent is the domain's classifier of errors a redelivery can
	// never fix; nil when it has none.
	permanent func(error) bool
	poison    *poisonLog
	metrics   metrics.PrometheusMetricsBuilder
	tracing   *middleware.Tracing // nil when tracing is off
	logger    *slog.Logger
}

// isPermanent reports whether a handler error can never be fixed by
// redelivering the message: an idempotency key reused for another
// payload, a missing key (middleware.Permanent), or what the domain says,
// such as a malformed payload. Such messages skip the retries and go to
// the poison topic. Every other error — a store or database outage, a copy
// still in progress — is retried in process and then nacked, so the broker
// redelivers it: nothing is parked in the poison topic during an outage.
func (p routerParts) isPermanent(err error) bool {
	return middleware.Permanent(err) || (p.permanent != nil && p.permanent(err))
}

// newRouter assembles the Watermill router: the middleware chain shared by
// every handler, then each route with a subscriber of its own and the
// middleware of its own (its timeout, and the receiver with its key and
// fingerprint), and the poison log.
func newRouter(p routerParts) (*message.Router, error) {
	cfg, t, tr, permanent := p.cfg, p.transport, p.tracing, p.isPermanent
	wlog := watermill.NewSlogLogger(p.logger)
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: cfg.ShutdownTimeout}, wlog)
	if err != nil {
		return nil, err
	}
	publisher := tr.Publisher(t.Publisher()) // tr is nil when tracing is off
	poison, err := wmmw.PoisonQueueWithFilter(publisher, PoisonTopic, permanent)
	if err != nil {
		return nil, err
	}
	// Outermost first. The order matters:
	//   recoverer    turns a handler panic into an error (after the receiver
	//                has released the claim);
	//   metrics      Watermill's handler execution time, per delivery;
	//   correlation  copies the correlation id onto produced messages;
	//   trace        a span per delivery, in the trace the message carries;
	//   logContext   the correlation id on every log line of the delivery;
	//   poison       parks permanent failures, acking the original;
	//   keepContext  hands poison the message with its original context;
	//   retry        retries the rest with exponential backoff, each attempt
	//                on a fresh context;
	//   outliveClose lets an attempt in flight when the router closes run
	//                to its end (a graceful shutdown), instead of cancelling
	//                it mid-effect;
	// and then each route's own, innermost (routeMiddleware):
	//   timeout      bounds one attempt (the lease outlives it: Validate
	//                and checkRoutes);
	//   receiver     claims the key, runs the handler once, replays duplicates;
	//   produce      writes the trace context into the produced messages,
	//                before the receiver stores them (or the outbox does).
	router.AddMiddleware(
		wmmw.Recoverer,
		p.metrics.NewRouterMiddleware().Middleware,
		wmmw.CorrelationID,
		tr.Consume,
		logContext,
		poison,
		keepContext,
		wmmw.Retry{
			MaxRetries:          cfg.RetryMax,
			InitialInterval:     cfg.RetryInterval,
			MaxInterval:         cfg.retryMaxInterval(),
			Multiplier:          2,
			ShouldRetry:         func(p wmmw.RetryParams) bool { return !permanent(p.Err) },
			ResetContextOnRetry: true,
			Logger:              wlog,
		}.Middleware,
		outliveClose,
	)

	router.AddPublisherDecorators(p.metrics.DecoratePublisher)
	router.AddSubscriberDecorators(p.metrics.DecorateSubscriber)

	for _, r := range p.routes {
		sub, err := t.Subscriber(r.Name)
		if err != nil {
			return nil, err
		}
		var h *message.Handler
		if r.Consume != nil {
			h = router.AddConsumerHandler(r.Name, r.Consumes, sub, r.Consume)
		} else {
			h = router.AddHandler(r.Name, r.Consumes, sub, r.Produces, publisher, r.Handle)
		}
		h.AddMiddleware(p.routeMiddleware(r)...)
	}
	sub, err := t.Subscriber(poisonLogHandler)
	if err != nil {
		return nil, err
	}
	router.AddConsumerHandler(poisonLogHandler, PoisonTopic, sub, p.poison.handle)
	return router, nil
}

// routeMiddleware is the middleware of route r alone, outermost first,
// inside the router's: its timeout (HANDLER_TIMEOUT unless the route sets
// its own), the receiver with the route's key and fingerprint functions
// (and the outbox in DEDUP_MODE=transaction), and the trace context of the
// messages it produces.
func (p routerParts) routeMiddleware(r domain.Route) []message.HandlerMiddleware {
	timeout := p.cfg.HandlerTimeout
	if r.Timeout > 0 {
		timeout = r.Timeout
	}
	var opts []middleware.MessageOption
	if p.outbox != nil {
		opts = append(opts, middleware.WithOutbox(p.outbox))
	}
	if r.Key != nil {
		opts = append(opts, middleware.WithKey(r.Key))
	}
	if r.Fingerprint != nil {
		opts = append(opts, middleware.WithFingerprint(r.Fingerprint))
	}
	return []message.HandlerMiddleware{wmmw.Timeout(timeout), p.receiver.Middleware(opts...), p.tracing.Produce}
}

// checkRoutes reports routes that cannot be wired (domain.Routes.Validate),
// that take the name of a handler of the service's own, or whose own
// timeout the lease does not outlive.
func checkRoutes(routes domain.Routes, lease time.Duration) error {
	err := routes.Validate()
	for _, r := range routes {
		if r.Name == poisonLogHandler || r.Name == outboxHandler {
			err = errors.Join(err, fmt.Errorf("route %q: the name is the service's own handler's", r.Name))
		}
		if r.Timeout >= lease {
			err = errors.Join(err, fmt.Errorf("route %q: Timeout %v must be shorter than DEDUP_LEASE=%v, or a claim could expire while its handler still runs", r.Name, r.Timeout, lease))
		}
	}
	if err != nil {
		return fmt.Errorf("message routes: %w", err)
	}
	return nil
}

// keepContext gives the message back the context it came with once the
// middleware inside returns. Timeout cancels the context it sets; without
// this the poison queue would publish the message with that cancelled
// context, which publishers that honour it (AMQP, SQL) refuse — the message
// would be nacked and loop at the head of its queue forever.
func keepContext(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		defer msg.SetContext(ctx)
		return h(msg)
	}
}

// outliveClose runs the attempt on a context that the router's Close does
// not cancel: Watermill cancels every message's context as it starts
// closing, and a handler cancelled between its side effect and its answer
// (a ledger row the database committed while the client gave up on it)
// fails, is released and runs again on another replica — a second effect
// from a graceful shutdown. HANDLER_TIMEOUT still bounds the attempt, and
// the router waits up to SHUTDOWN_TIMEOUT for it. Retry, outside, keeps the
// cancellable context, so it stops retrying once the router closes.
func outliveClose(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		defer msg.SetContext(ctx)
		msg.SetContext(context.WithoutCancel(ctx))
		return h(msg)
	}
}
