package flow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/transport"
)

// readyTimeout bounds an instance's start: its migrations, its broker's
// topics and subscriptions.
const readyTimeout = time.Minute

// instance is one running service of a ServiceBench: an App running the
// test domain, whose route functions report to the round in current (see
// timer), and the producer that feeds it.
type instance struct {
	cfg      app.Config
	app      *app.App
	stopRun  context.CancelFunc
	ran      chan error
	producer *app.Producer
	routes   domain.Routes // the domain's, for their count and their names
	current  atomic.Pointer[progress]
	base     string // http://host:port of its HTTP server
}

// startInstance starts a service on the broker of o, its ledger in s, with
// HANDLER_CONCURRENCY=concurrency and every other setting at its default
// but those naming where things are (and DATABASE_MAX_CONNS when o sets
// it), and returns once /readyz answers.
// Its charges go to a provider it starts in process
// (testdomain.ProviderSetting unset), as every instance's do.
func startInstance(ctx context.Context, o ServiceOptions, s *schema, concurrency int) (_ *instance, err error) {
	ns := "bs" + shortID()
	environ := []string{
		"TRANSPORT=" + o.Kind, "STORE=redis", "REDIS_URL=redis://" + o.RedisAddr + "/0", "DATABASE_URL=" + s.url,
		"SERVICE_NAME=" + ns, "TOPIC_PREFIX=" + ns + ".", "HANDLER_CONCURRENCY=" + strconv.Itoa(concurrency),
		// Records live as long as the bench's others, not a day, on a
		// Redis the tests share.
		"DEDUP_TTL=" + recordTTL.String(),
		"HTTP_ADDR=127.0.0.1:0", "ALLOW_ANONYMOUS=true",
	}
	if o.DatabaseMaxConns > 0 {
		environ = append(environ, "DATABASE_MAX_CONNS="+strconv.Itoa(o.DatabaseMaxConns))
	}
	switch o.Kind {
	case transport.Kafka:
		environ = append(environ, "KAFKA_BROKERS="+strings.Join(o.KafkaBrokers, ","))
	case transport.AMQP:
		environ = append(environ, "AMQP_URL="+o.AMQPURL)
	case transport.NATS:
		environ = append(environ, "NATS_URL="+o.NATSURL)
	case transport.RedisStream:
		environ = append(environ, "REDIS_STREAM_URL="+o.RedisStreamURL)
	}
	cfg, err := app.LoadConfig(environ)
	if err != nil {
		return nil, err
	}
	in := &instance{cfg: cfg, ran: make(chan error, 1), routes: testdomain.Routes()}
	d := testdomain.Domain(testdomain.WithMiddleware(in.timer))
	if in.app, err = app.New(ctx, cfg, d, o.Logger); err != nil {
		return nil, fmt.Errorf("starting the service on %s: %w", o.Kind, err)
	}
	in.base = "http://" + in.app.Addr()
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	in.stopRun = stopRun
	go func() { in.ran <- in.app.Run(runCtx) }()
	defer func() {
		if err != nil {
			err = errors.Join(err, in.stop(o))
		}
	}()
	if err := in.waitReady(ctx); err != nil {
		return nil, err
	}
	if in.producer, err = app.OpenProducer(ctx, cfg, []string{testdomain.TopicRequested}); err != nil {
		return nil, fmt.Errorf("opening the producer: %w", err)
	}
	if _, err := in.round(ctx, o, s, warmup); err != nil {
		return nil, fmt.Errorf("warming up: %w", err)
	}
	return in, nil
}

// warmup is how many requests a consumer handles before its first round:
// enough that every route of it is consuming (on Kafka, a member of its
// group with its partitions) and its connections are open, so that its
// first round runs as its others do.
const warmup = 20

// timer is the middleware around each route's function that reports its
// calls and returns to the round in.current holds, if any: the functions
// run as they are, inside the router, the receiver and every middleware
// the service puts around them.
func (in *instance) timer(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		p := in.current.Load()
		p.began()
		out, err := h(msg)
		p.returned(err)
		return out, err
	}
}

// waitReady returns once the instance's /readyz answers 200, or an error
// when its Run ended or readyTimeout passed.
func (in *instance) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-in.ran:
			in.ran <- err
			return fmt.Errorf("the service stopped before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("the service was not ready within %v: %w", readyTimeout, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop stops the instance, closes it and its producer and removes what it
// left on the brokers.
func (in *instance) stop(o ServiceOptions) error {
	var errs []error
	if in.producer != nil {
		errs = append(errs, in.producer.Close())
	}
	if in.stopRun != nil {
		in.stopRun()
		errs = append(errs, <-in.ran)
	}
	if in.app != nil {
		errs = append(errs, in.app.Close())
	}
	exchanges, queues := in.cfg.AMQPDeclared(in.routes)
	errs = append(errs, removeBrokerState(o, in.cfg.TopicPrefix, exchanges, queues))
	return errors.Join(errs...)
}
