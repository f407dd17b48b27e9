package app

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/middleware"
)

// PoisonTopic receives messages that redelivery can never fix, with the
// reason in metadata "reason_poisoned" and their topic in "topic_poisoned".
const PoisonTopic = "poison"

// permanent reports whether a handler error can never be fixed by
// redelivering the message: a malformed payload, an idempotency key reused
// for another payload, a missing key. Such messages skip the retries and go
// to the poison topic. Every other error — a store or database outage, a
// copy still in progress — is retried in process and then nacked, so the
// broker redelivers it: nothing is parked in the poison topic during an
// outage.
func permanent(err error) bool {
	return middleware.Permanent(err) || errors.Is(err, handlers.ErrMalformed)
}

// newRouter assembles the Watermill router: the middleware chain shared by
// every handler, then each of routes with a subscriber of its own, and the
// poison log. With ob set (DEDUP_MODE=transaction), handlers' produced
// messages are written through it inside their unit of work instead of
// being published by the router.
func newRouter(cfg Config, t broker, receiver *middleware.Receiver, ob middleware.Outbox,
	routes handlers.Routes, pl *poisonLog, m metrics.PrometheusMetricsBuilder, tr *middleware.Tracing, logger *slog.Logger) (*message.Router, error) {
	wlog := watermill.NewSlogLogger(logger)
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
	//   KeepContext  hands poison the message with its original context;
	//   retry        retries the rest with exponential backoff, each attempt
	//                on a fresh context;
	//   OutliveClose lets an attempt in flight when the router closes run
	//                to its end (a graceful shutdown), instead of cancelling
	//                it mid-effect;
	//   timeout      bounds one attempt (the lease outlives it: Validate);
	//   receiver     claims the key, runs the handler once, replays duplicates;
	//   produce      writes the trace context into the produced messages,
	//                before the receiver stores them (or the outbox does).
	var receiverOpts []middleware.MessageOption
	if ob != nil {
		receiverOpts = append(receiverOpts, middleware.WithOutbox(ob))
	}
	router.AddMiddleware(
		wmmw.Recoverer,
		m.NewRouterMiddleware().Middleware,
		wmmw.CorrelationID,
		tr.Consume,
		logContext,
		poison,
		middleware.KeepContext,
		wmmw.Retry{
			MaxRetries:          cfg.RetryMax,
			InitialInterval:     cfg.RetryInterval,
			MaxInterval:         cfg.retryMaxInterval(),
			Multiplier:          2,
			ShouldRetry:         func(p wmmw.RetryParams) bool { return !permanent(p.Err) },
			ResetContextOnRetry: true,
			Logger:              wlog,
		}.Middleware,
		middleware.OutliveClose,
		wmmw.Timeout(cfg.HandlerTimeout),
		receiver.Middleware(receiverOpts...),
		tr.Produce,
	)

	router.AddPublisherDecorators(m.DecoratePublisher)
	router.AddSubscriberDecorators(m.DecorateSubscriber)

	for _, r := range routes {
		sub, err := t.Subscriber(r.Name)
		if err != nil {
			return nil, err
		}
		if r.Consume != nil {
			router.AddConsumerHandler(r.Name, r.Consumes, sub, r.Consume)
		} else {
			router.AddHandler(r.Name, r.Consumes, sub, r.Produces, publisher, r.Handle)
		}
	}
	sub, err := t.Subscriber(poisonLogHandler)
	if err != nil {
		return nil, err
	}
	router.AddConsumerHandler(poisonLogHandler, PoisonTopic, sub, pl.handle)
	return router, nil
}

// checkRoutes reports routes that cannot be wired (handlers.Routes.Validate)
// or that take the name of a handler of the service's own.
func checkRoutes(routes handlers.Routes) error {
	err := routes.Validate()
	for _, r := range routes {
		if r.Name == poisonLogHandler || r.Name == outboxHandler {
			err = errors.Join(err, fmt.Errorf("route %q: the name is the service's own handler's", r.Name))
		}
	}
	if err != nil {
		return fmt.Errorf("message routes: %w", err)
	}
	return nil
}
