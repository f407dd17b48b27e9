package amqp

import (
	"fmt"
	"testing"
	"time"

	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The transport on its own: fan-out to every handler's queue, work shared
// by the replicas of one handler, redelivery of a nacked message.
func TestAMQPTransport(t *testing.T) {
	url := brokerenv.AMQP(t)
	prefix, service := testenv.Names()
	cfg := Config{URL: url, ConnectTimeout: 5 * time.Second, TopicPrefix: prefix, ServiceName: service}
	queue := cfg.names().AMQPQueue
	brokerenv.DeleteAMQPOnCleanup(t, url,
		[]string{prefix + "fanout", prefix + "shared", prefix + "nack", prefix + "lanes", prefix + "handback"},
		[]string{queue("fanout", "a"), queue("fanout", "b"), queue("shared", "r"), queue("nack", "n"),
			queue("lanes", "lanes"), queue("handback", "handback")})
	tr := newTestTransport(t, cfg)

	t.Run("every handler gets every message", func(t *testing.T) {
		a, b := transporttest.Subscribe(t, tr, "a", "fanout"), transporttest.Subscribe(t, tr, "b", "fanout")
		sent := transporttest.PublishN(t, tr, "fanout", 10)
		for name, ch := range map[string]<-chan *message.Message{"a": a, "b": b} {
			got := transporttest.Receive(t, ch, len(sent))
			for _, m := range got {
				want, ok := sent[m.UUID]
				if !ok || string(m.Payload) != string(want.Payload) || m.Metadata.Get("idempotency_key") != want.Metadata.Get("idempotency_key") {
					t.Errorf("handler %s got %s %q %v, not a message that was sent", name, m.UUID, m.Payload, m.Metadata)
				}
			}
			if len(transporttest.UUIDs(got)) != len(sent) {
				t.Errorf("handler %s got %d distinct messages, want %d", name, len(transporttest.UUIDs(got)), len(sent))
			}
		}
	})

	t.Run("replicas share a handler's queue", func(t *testing.T) {
		replicas := []<-chan *message.Message{
			transporttest.Subscribe(t, tr, "r", "shared"), transporttest.Subscribe(t, newTestTransport(t, cfg), "r", "shared"),
		}
		waitConsumers(t, url, queue("shared", "r"), 2)
		transporttest.CheckReplicasShare(t, replicas, transporttest.PublishN(t, tr, "shared", 20), 0)
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) {
		if again := transporttest.CheckNackRedelivered(t, tr, "nack"); !wmamqp.IsMessageRedelivered(again) {
			t.Error("the second delivery is not marked as redelivered")
		}
	})

	t.Run("a handler holds its in-flight count at once", func(t *testing.T) { transporttest.CheckInFlight(t, tr, "lanes", 8, 9) })

	t.Run("a closed subscriber hands back what it held", func(t *testing.T) { transporttest.CheckCloseHandsBack(t, tr, "handback", 8) })

	t.Run("close ends every subscription and the publisher", func(t *testing.T) {
		transporttest.CheckCloseEnds(t, transporttest.OpenerOf(New, cfg), "fanout")
	})
}

// waitConsumers waits until queue has n consumers, so that messages
// published next are spread over all of them.
func waitConsumers(t *testing.T, url, queue string, n int) {
	t.Helper()
	transporttest.WaitFor(t, fmt.Sprintf("%d consumers on %s", n, queue), func() bool {
		var q amqp091.Queue
		brokerenv.AMQPChannel(t, url, func(ch *amqp091.Channel) (err error) {
			q, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			return err
		})
		return q.Consumers >= n
	})
}

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *broker.Transport {
	t.Helper()
	return transporttest.Open(t, New, cfg)
}
