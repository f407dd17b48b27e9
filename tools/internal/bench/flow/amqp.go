package flow

import (
	"fmt"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

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
