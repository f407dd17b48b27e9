//go:build !race

// The race detector is off for this file: when a connection comes back,
// watermill-amqp's reconnect swaps ConnectionWrapper's connection and its
// connected channel without a lock, and -race reports it inside that
// library whenever the reconnected connection is used.

package amqp

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The publisher keeps its channels open across publishes, and publishes
// again once a lost connection is back: cut by the client, and closed by
// RabbitMQ (with rabbitmqctl, when it is at hand).
func TestAMQPPublisherReopensChannels(t *testing.T) {
	url := brokerenv.AMQP(t)
	prefix, service := testenv.Names()
	cfg := Config{URL: url, ConnectTimeout: 5 * time.Second, TopicPrefix: prefix, ServiceName: service}.withDefaults()
	exchange, queue := prefix+"published", prefix+"published_q"
	brokerenv.DeleteAMQPOnCleanup(t, url, []string{exchange}, []string{queue})
	conn, err := connect(t.Context(), cfg, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	p := newConfirmingPublisher(conn, preset(url, ""))
	t.Cleanup(func() { _ = p.Close() })
	publish := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		m := message.NewMessage(watermill.NewUUID(), []byte("{}"))
		m.SetContext(ctx)
		return p.Publish(exchange, m)
	}
	if err := publish(); err != nil { // declares the exchange
		t.Fatal(err)
	}
	brokerenv.AMQPChannel(t, url, func(ch *amqp091.Channel) error {
		if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(queue, "", exchange, false, nil)
	})
	queued := func() int {
		var q amqp091.Queue
		brokerenv.AMQPChannel(t, url, func(ch *amqp091.Channel) (err error) {
			q, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			return err
		})
		return q.Messages
	}

	t.Run("channels stay open across publishes", func(t *testing.T) {
		for range 2 * publishChannels {
			if err := publish(); err != nil {
				t.Fatal(err)
			}
		}
		opened := openChannels(p)
		for range 2 * publishChannels {
			if err := publish(); err != nil {
				t.Fatal(err)
			}
		}
		for i, ch := range openChannels(p) {
			if ch != opened[i] {
				t.Errorf("channel %d was opened again between publishes", i)
			}
		}
		transporttest.WaitFor(t, "every message queued", func() bool { return queued() == 4*publishChannels })
	})

	republish := func(t *testing.T, cut func()) {
		before := queued()
		cut()
		transporttest.WaitFor(t, "a publish after the connection was lost", func() bool { return publish() == nil })
		for range 2 * publishChannels { // every channel, reopened
			if err := publish(); err != nil {
				t.Fatal(err)
			}
		}
		transporttest.WaitFor(t, "the messages published after the loss queued", func() bool { return queued() == before+1+2*publishChannels })
	}

	t.Run("a connection cut by the client", func(t *testing.T) {
		republish(t, func() { _ = conn.Connection().Close() })
	})

	t.Run("a connection closed by RabbitMQ", func(t *testing.T) {
		if _, err := exec.LookPath("rabbitmqctl"); err != nil {
			t.Skip("rabbitmqctl not found")
		}
		republish(t, func() { closeAMQPConnection(t, conn.Connection()) })
	})
}

// openChannels lists p's channels as they are now.
func openChannels(p *confirmingPublisher) []*amqp091.Channel {
	chans := make([]*amqp091.Channel, len(p.channels))
	for i := range p.channels {
		p.channels[i].mu.Lock()
		chans[i] = p.channels[i].ch
		p.channels[i].mu.Unlock()
	}
	return chans
}

// closeAMQPConnection has RabbitMQ close conn, found by its client port,
// skipping t when rabbitmqctl cannot list or close connections here.
func closeAMQPConnection(t *testing.T, conn *amqp091.Connection) {
	t.Helper()
	addr, ok := conn.LocalAddr().(*net.TCPAddr)
	if !ok {
		t.Skipf("connection from %v, not TCP", conn.LocalAddr())
	}
	port := strconv.Itoa(addr.Port)
	out, err := exec.Command("rabbitmqctl", "-q", "list_connections", "pid", "peer_port").CombinedOutput()
	if err != nil {
		t.Skipf("rabbitmqctl list_connections: %v: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[1] == port {
			if out, err := exec.Command("rabbitmqctl", "close_connection", fields[0], "test").CombinedOutput(); err != nil {
				t.Skipf("rabbitmqctl close_connection: %v: %s", err, out)
			}
			return
		}
	}
	t.Skipf("no connection from port %s in rabbitmqctl's list", port)
}
