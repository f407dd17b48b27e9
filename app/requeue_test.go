package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/transport"
)

// requeueing is the test domain with its charge route requeueing its
// failures (1 s, at most twice) and failing, before its handler runs,
// while down holds the payment's id, counting the attempts by id.
func requeueing(down *sync.Map, attempts *sync.Map) domain.Domain {
	d := testdomain.Domain(testdomain.WithMiddleware(func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			if message.HandlerNameFromCtx(msg.Context()) != testdomain.ChargeRoute {
				return h(msg)
			}
			e, err := testdomain.Decode(msg.Payload)
			if err == nil {
				n, _ := attempts.LoadOrStore(e.ID, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				if _, ok := down.Load(e.ID); ok {
					return nil, errors.New("the provider answered 503")
				}
			}
			return h(msg)
		}
	}))
	open := d.Open
	d.Open = func(ctx context.Context, deps domain.Deps) (*domain.Parts, error) {
		parts, err := open(ctx, deps)
		if err != nil {
			return nil, err
		}
		for i := range parts.Routes {
			if parts.Routes[i].Name == testdomain.ChargeRoute {
				parts.Routes[i].Requeue = &domain.Requeue{Delay: time.Second, Max: 2}
			}
		}
		return parts, nil
	}
	return d
}

// A route that requeues gets a failed message back through the broker a
// delay later, and runs it once when its dependency is back; one that
// keeps failing is parked after its last requeue as retries_exhausted,
// and a redrive then charges it once. The requeue topic travels on every
// broker (in process, where a publish returns once handled, a route does
// not requeue).
func TestRequeueBeforePoison(t *testing.T) {
	// What a requeueing service declares on RabbitMQ: the requeuer's queue too.
	declared := func(prefix, service string) (exchanges, queues []string) {
		routes := testdomain.Routes()
		routes[0].Requeue = &domain.Requeue{Delay: time.Second, Max: 2}
		return Config{TopicPrefix: prefix, ServiceName: service}.AMQPDeclared(routes)
	}
	for _, kind := range []string{transport.RedisStream, transport.NATS, transport.Kafka, transport.SQL, transport.AMQP} {
		if !builtIn(kind) {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var down, attempts sync.Map
			down.Store("recovers", true)
			down.Store("stays-down", true)
			a := startDomain(t, requeueing(&down, &attempts), seams{}, testLogger(t),
				append(brokerenv.ServiceEnv(t, kind, declared), "RETRY_MAX=1", "ADMIN_API_KEYS="+operatorKey+":alice")...)
			count := func(id string) int32 {
				n, ok := attempts.Load(id)
				if !ok {
					return 0
				}
				return n.(*atomic.Int32).Load()
			}
			flowtest.PostOK(t, a, "recovers")
			flowtest.PostOK(t, a, "stays-down")
			// RETRY_MAX=1: two attempts per delivery. Once recovers has
			// been requeued, its dependency comes back.
			waitFor(t, "recovers requeued", func() bool { return count("recovers") >= 3 })
			down.Delete("recovers")
			c := &admin.Client{BaseURL: a.ops, APIKey: operatorKey}
			var parked []poison.Message
			waitFor(t, "stays-down parked after its requeues", func() bool {
				p, err := c.Poisoned(t.Context(), poison.Filter{Class: poison.RetriesExhausted})
				parked = p.Messages
				return err == nil && len(p.Messages) == 1
			})
			if got := count("stays-down"); got != 6 {
				t.Errorf("stays-down ran %d times, want 2 attempts on each of 3 deliveries", got)
			}
			waitFor(t, "recovers charged", func() bool { return flowtest.Tally(t, a).Charges.Rows == 1 })

			down.Delete("stays-down")
			if _, err := c.Redrive(t.Context(), parked[0].ID, false); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "stays-down charged once redriven", func() bool { return flowtest.Tally(t, a).Charges.Rows == 2 })
			if got := flowtest.Tally(t, a).Charges; got.IDs != 2 {
				t.Errorf("charges %+v, want each payment once", got)
			}
		})
	}
}
