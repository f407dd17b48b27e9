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
	var receiverOpts []middleware.MessageOption
	if ob != nil {
		receiverOpts = append(receiverOpts, middleware.WithOutbox(ob))
	}
	retries := cfg.RetryMax
	if retries == 0 {
		retries = middleware.NoRetries
	}
	// The order is middleware.Install's; here, outside the poison queue:
	//   metrics      Watermill's handler execution time, per delivery;
	//   correlation  copies the correlation id onto produced messages;
	//   trace        a span per delivery, in the trace the message carries;
	//   logContext   the correlation id on every log line of the delivery;
	// and inside the receiver:
	//   produce      writes the trace context into the produced messages,
	//                before the receiver stores them (or the outbox does).
	err = middleware.Install(router, middleware.RouterConfig{
		Receiver:         receiver,
		ReceiverOptions:  receiverOpts,
		PoisonPublisher:  publisher,
		PoisonTopic:      PoisonTopic,
		Permanent:        middleware.PermanentErrors(handlers.ErrMalformed),
		Retries:          retries,
		RetryInterval:    cfg.RetryInterval,
		RetryMaxInterval: cfg.retryMaxInterval(),
		Timeout:          cfg.HandlerTimeout,
		Outer:            []message.HandlerMiddleware{m.NewRouterMiddleware().Middleware, wmmw.CorrelationID, tr.Consume, logContext},
		Inner:            []message.HandlerMiddleware{tr.Produce},
		Logger:           wlog,
	})
	if err != nil {
		return nil, err
	}

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
