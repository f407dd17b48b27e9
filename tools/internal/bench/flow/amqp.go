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
	return a.wrap(onAMQPChannel(a.url, func(ch *amqp091.Channel) error {
		if err := ch.ExchangeDeclare(a.exchange, "fanout", true, false, false, false, nil); err != nil {
			return err
		}
		if _, err := ch.QueueDeclare(a.queue, true, false, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(a.queue, "", a.exchange, false, nil)
	}))
}

func (a amqpTopology) remove() error {
	return a.wrap(removeAMQP(a.url, []string{a.exchange}, []string{a.queue}))
}

// wrap names the topology in err, if not nil.
func (a amqpTopology) wrap(err error) error {
	if err != nil {
		return fmt.Errorf("queue %s on exchange %s: %w", a.queue, a.exchange, err)
	}
	return nil
}

// onAMQPChannel runs f on a channel of a connection of its own to the
// RabbitMQ at url.
func onAMQPChannel(url string, f func(*amqp091.Channel) error) error {
	conn, err := amqp091.Dial(url)
	if err != nil {
		return fmt.Errorf("connecting to RabbitMQ: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("opening a RabbitMQ channel: %w", err)
	}
	defer ch.Close()
	return f(ch)
}

// removeAMQP deletes queues, then exchanges, on the RabbitMQ at url.
func removeAMQP(url string, exchanges, queues []string) error {
	return onAMQPChannel(url, func(ch *amqp091.Channel) error {
		for _, q := range queues {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				return fmt.Errorf("deleting queue %s: %w", q, err)
			}
		}
		for _, e := range exchanges {
			if err := ch.ExchangeDelete(e, false, false); err != nil {
				return fmt.Errorf("deleting exchange %s: %w", e, err)
			}
		}
		return nil
	})
}
