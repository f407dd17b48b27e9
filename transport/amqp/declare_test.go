package amqp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// Publishing to topics new to the publisher, concurrently with publishes
// to others on the same channels, keeps the connection: an exchange
// declared on a channel another Publish is sending on could land between
// that message's frames, and RabbitMQ closes the connection for it
// (UNEXPECTED_FRAME).
func TestAMQPPublisherDeclaresBesidePublishes(t *testing.T) {
	url := brokerenv.AMQP(t)
	prefix, service := testenv.Names()
	cfg := Config{URL: url, ConnectTimeout: 5 * time.Second, TopicPrefix: prefix, ServiceName: service}.withDefaults()
	const topics, batch = 48, 100
	var exchanges []string
	for i := range topics {
		exchanges = append(exchanges, fmt.Sprintf("%sdeclared-%d", prefix, i))
	}
	brokerenv.DeleteAMQPOnCleanup(t, url, append(exchanges, prefix+"busy"), nil)
	conn, err := connect(t.Context(), cfg, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	p := newConfirmingPublisher(conn, preset(url, ""))
	t.Cleanup(func() { _ = p.Close() })
	publish := func(exchange string, n int) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		msgs := make([]*message.Message, n)
		for i := range msgs {
			msgs[i] = message.NewMessage(watermill.NewUUID(), []byte(`{}`))
			msgs[i].SetContext(ctx)
		}
		return p.Publish(exchange, msgs...)
	}
	if err := publish(prefix+"busy", 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var busy sync.WaitGroup
	for range 2 * publishChannels {
		busy.Go(func() {
			for ctx.Err() == nil {
				if err := publish(prefix+"busy", batch); err != nil {
					t.Errorf("publishing beside the declares: %v", err)
					return
				}
			}
		})
	}
	var declaring sync.WaitGroup
	for _, exchange := range exchanges {
		declaring.Go(func() {
			if err := publish(exchange, 1); err != nil {
				t.Errorf("publishing to the new %s: %v", exchange, err)
			}
		})
	}
	declaring.Wait()
	cancel()
	busy.Wait()
}
