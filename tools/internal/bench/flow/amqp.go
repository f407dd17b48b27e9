package flow

import (
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// amqpPublisherChannels is how many channels the round's publisher keeps
// open: as many as publishingOf runs Publish calls at once.
const amqpPublisherChannels = 64

// newAMQPPublisher returns the publisher that feeds an AMQP round: the
// transport's message format and publisher confirms, over a pool of open
// channels where the transport's publisher opens one per message (its
// amqpConfig says why it does).
func newAMQPPublisher(url string, logger *slog.Logger) (*amqp.Publisher, error) {
	cfg := amqp.NewDurablePubSubConfig(url, nil)
	cfg.Publish.ConfirmDelivery = true
	cfg.Publish.ChannelPoolSize = amqpPublisherChannels
	p, err := amqp.NewPublisher(cfg, watermill.NewSlogLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("connecting the round's publisher to RabbitMQ: %w", err)
	}
	return p, nil
}

// amqpTopology declares the exchange and queue through which the AMQP
// transport's subscriber consumes exchange (a fanout, durable) as queue,
// with the transport's settings, so that messages published before the
// subscriber starts are kept; remove deletes both.
type amqpTopology struct{ url, exchange, queue string }

func (a amqpTopology) declare() error {
	return a.onChannel(func(ch *amqp091.Channel) error {
		if err := ch.ExchangeDeclare(a.exchange, "fanout", true, false, false, false, nil); err != nil {
			return err
		}
		if _, err := ch.QueueDeclare(a.queue, true, false, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(a.queue, "", a.exchange, false, nil)
	})
}

func (a amqpTopology) remove() error {
	return a.onChannel(func(ch *amqp091.Channel) error {
		if _, err := ch.QueueDelete(a.queue, false, false, false); err != nil {
			return err
		}
		return ch.ExchangeDelete(a.exchange, false, false)
	})
}

func (a amqpTopology) onChannel(f func(*amqp091.Channel) error) error {
	conn, err := amqp091.Dial(a.url)
	if err != nil {
		return fmt.Errorf("connecting to RabbitMQ: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("opening a RabbitMQ channel: %w", err)
	}
	defer ch.Close()
	if err := f(ch); err != nil {
		return fmt.Errorf("queue %s on exchange %s: %w", a.queue, a.exchange, err)
	}
	return nil
}
