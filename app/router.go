package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	wmmetrics "github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
	"github.com/onceflow/onceflow/middleware/tracecontext"
	"github.com/onceflow/onceflow/transport"
)

// PoisonTopic receives messages that redelivery can never fix, with the
// reason in metadata "reason_poisoned" and their topic in "topic_poisoned".
const PoisonTopic = "poison"

// poisonLogHandler names the handler that reads the poison topic.
const poisonLogHandler = "poison_log"

// RequeueTopic receives the failed messages of the routes that requeue
// (domain.Route.Requeue), each until its delay is over; requeueHandler
// reads it (Watermill's requeuer) and has a consumer group of its own.
const (
	RequeueTopic   = "requeue"
	requeueHandler = "requeuer"
)

// routerParts is what newRouter assembles.
type routerParts struct {
	cfg       Config
	transport messageBroker
	// receivers are the idempotent receivers by mode: DEDUP_MODE's, and
	// the other when a route chooses it.
	receivers map[domain.Mode]*receiver.Receiver
	// outbox writes the produced messages of the routes in transaction
	// mode inside their unit of work instead of the router publishing
	// them; nil when none is.
	outbox consume.Outbox
	routes domain.Routes
	// permanent is the domain's classifier of errors a redelivery can
	// never fix, besides the receiver's own; nil when it has none.
	permanent func(error) bool
	// malformed tells the permanent errors of a payload that does not
	// decode; nil when the domain does not.
	malformed func(error) bool
	// poison reads the poison topic: it logs, counts and parks.
	poison  message.NoPublishHandlerFunc
	metrics wmmetrics.PrometheusMetricsBuilder
	tracing *tracecontext.Messages // nil when tracing is off
	// signer signs the messages the handlers produce and verifies the
	// messages they consume; nil when MESSAGE_SIGNING_SECRETS is unset.
	signer *signing.Signer
	logger *slog.Logger
}

// newRouter assembles the Watermill router: the middleware chain shared by
// every handler (consume.Install's order, with the service's metrics,
// correlation ids, traces and log context), then each route with a
// subscriber of its own and its own settings (HANDLER_CONCURRENCY messages
// in flight unless the route sets its Concurrency), and the poison log.
func newRouter(p routerParts) (*message.Router, error) {
	cfg, t, tr := p.cfg, p.transport, p.tracing
	wlog := consume.NewLogger(p.logger) // a duplicate race at Info
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: cfg.ShutdownTimeout}, wlog)
	if err != nil {
		return nil, err
	}
	// The poison topic gets a message as it came, unsigned if it was: a
	// forged message replayed from there must fail its check again.
	poisonPublisher := tr.Publisher(t.Publisher()) // tr is nil when tracing is off
	publisher := p.signer.Publisher(poisonPublisher)
	var retry *consume.Retry // RETRY_MAX=0: none
	if cfg.RetryMax > 0 {
		retry = &consume.Retry{Max: cfg.RetryMax, Interval: cfg.RetryInterval, MaxInterval: cfg.retryMaxInterval()}
	}
	// The order is consume.Install's; here, outside the poison queue:
	//   metrics      Watermill's handler execution time, per delivery;
	//   correlation  copies the correlation id onto produced messages;
	//   trace        a span per delivery, in the trace the message carries;
	//   logContext   the correlation id on every log line of the delivery;
	// and inside the receiver:
	//   produce      writes the trace context into the produced messages,
	//                before the receiver stores them (or the outbox does).
	// A route's own timeout, key, fingerprint and mode apply to it alone.
	requeue, err := p.requeue(poisonPublisher)
	if err != nil {
		return nil, err
	}
	err = consume.Install(router, consume.RouterConfig{
		Receiver:   p.receivers[domain.Mode(cfg.DedupMode)],
		Retry:      retry,
		Poison:     &consume.Poison{Publisher: poisonPublisher, Topic: PoisonTopic, Malformed: p.malformed},
		Permanent:  p.permanent,
		MaxPayload: cfg.MaxMessageBytes,
		Signer:     p.signer,
		Requeue:    requeue,
		Timeout:    cfg.HandlerTimeout,
		Handlers:   p.routeSettings(),
		Outer:      []message.HandlerMiddleware{p.metrics.NewRouterMiddleware().Middleware, wmmw.CorrelationID, tr.Consume, logContext},
		Inner:      []message.HandlerMiddleware{tr.Produce},
		Logger:     p.logger,
	})
	if err != nil {
		return nil, err
	}

	router.AddPublisherDecorators(p.metrics.DecoratePublisher)
	router.AddSubscriberDecorators(p.metrics.DecorateSubscriber)

	for _, r := range p.routes {
		inFlight := r.Concurrency
		if inFlight == 0 {
			inFlight = cfg.HandlerConcurrency
		}
		sub, err := t.Subscriber(r.Name, inFlight)
		if err != nil {
			return nil, err
		}
		if r.Consume != nil {
			router.AddConsumerHandler(r.Name, r.Consumes, sub, r.Consume)
		} else {
			router.AddHandler(r.Name, r.Consumes, sub, r.Produces, publisher, r.Handle)
		}
	}
	sub, err := t.Subscriber(poisonLogHandler, 1) // a log line per message: nothing to gain from more
	if err != nil {
		return nil, err
	}
	router.AddConsumerHandler(poisonLogHandler, PoisonTopic, sub, p.poison)
	return router, nil
}

// routeSettings are the settings the routes set for themselves: a timeout
// of their own, a key or fingerprint function, a requeue; and in transaction mode
// the outbox, with the receiver of that mode when it is not DEDUP_MODE.
func (p routerParts) routeSettings() map[string]consume.HandlerConfig {
	own := map[string]consume.HandlerConfig{}
	for _, r := range p.routes {
		hc := consume.HandlerConfig{Timeout: r.Timeout}
		if q := r.Requeue; q != nil && p.requeues() {
			hc.Requeue = &consume.RequeuePolicy{Delay: q.Delay, Max: q.Max}
		}
		if r.Key != nil {
			hc.Options = append(hc.Options, consume.WithKey(r.Key))
		}
		if r.Fingerprint != nil {
			hc.Options = append(hc.Options, consume.WithFingerprint(r.Fingerprint))
		}
		mode := p.cfg.mode(r)
		if mode == domain.ModeTransaction {
			hc.Options = append(hc.Options, consume.WithOutbox(p.outbox))
		}
		if mode != domain.Mode(p.cfg.DedupMode) {
			hc.Receiver = p.receivers[mode]
		}
		if hc.Timeout > 0 || len(hc.Options) > 0 || hc.Receiver != nil || hc.Requeue != nil {
			own[r.Name] = hc
		}
	}
	return own
}

// checkRoutes reports routes that cannot be wired (domain.Routes.Validate),
// that take the name of a handler of the service's own, whose own
// timeout the lease does not outlive, or whose own mode the service
// cannot run.
func checkRoutes(routes domain.Routes, cfg Config) error {
	err := routes.Validate()
	for _, r := range routes {
		if r.Name == poisonLogHandler || r.Name == outboxHandler || r.Name == requeueHandler {
			err = errors.Join(err, fmt.Errorf("route %q: the name is the service's own handler's", r.Name))
		}
		if r.Timeout >= cfg.DedupLease {
			err = errors.Join(err, fmt.Errorf("route %q: Timeout %v must be shorter than DEDUP_LEASE=%v, or a claim could expire while its handler still runs", r.Name, r.Timeout, cfg.DedupLease))
		}
		err = errors.Join(err, cfg.checkRouteMode(r))
		if q := r.Requeue; q != nil && cfg.MessageSigningSecrets != "" && time.Duration(q.Max)*q.Delay >= cfg.signingMaxAge() {
			err = errors.Join(err, fmt.Errorf("route %q: Requeue's %d requeues of %v reach MESSAGE_SIGNING_MAX_AGE=%v: a requeued message keeps its signature, which would expire on the way",
				r.Name, q.Max, q.Delay, cfg.signingMaxAge()))
		}
	}
	if err != nil {
		return fmt.Errorf("message routes: %w", err)
	}
	return nil
}

// requeue is the requeue topic's sink and reader when a route requeues
// (domain.Route.Requeue), nil otherwise. A requeued message goes out as it
// came, through pub, unsigned if it was: its own signature still holds on
// its topic.
func (p routerParts) requeue(pub message.Publisher) (*consume.Requeue, error) {
	if !p.routes.Requeue() {
		return nil, nil
	}
	if !p.requeues() {
		p.logger.Warn("TRANSPORT=gochannel: routes that requeue (domain.Route.Requeue) have their failed messages delivered again at once; " +
			"in process a publish returns once its message is handled, so a requeue would hold the publisher for every delay")
		return nil, nil
	}
	sub, err := p.transport.Subscriber(requeueHandler, p.cfg.HandlerConcurrency) // each waits out its delay: more in flight, no queue behind one
	if err != nil {
		return nil, err
	}
	return &consume.Requeue{Publisher: pub, Subscriber: sub, Topic: RequeueTopic, Topics: p.routes.Topics()}, nil
}

// requeues reports whether the transport requeues through the broker: all
// but the in-process one.
func (p routerParts) requeues() bool { return p.cfg.Transport != transport.GoChannel }
