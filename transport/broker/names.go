package broker

import (
	"strings"
	"unicode"
)

// Names are what a service names the consumer groups, queues and streams
// it creates on a broker after: its topic prefix and its name. The names
// are part of each broker's contract with producers and operators outside
// the service, and the tests and the bench find what a service created by
// them.
type Names struct {
	// TopicPrefix is prepended to every topic on the broker and to the
	// consumer groups, so that environments and test runs can share one
	// broker.
	TopicPrefix string
	// ServiceName names the consumer groups and queues.
	ServiceName string
}

// ConsumerGroup names the consumer group (Kafka, SQL, Redis Streams), queue
// (AMQP, see [Names.AMQPQueue]) or durable consumer (NATS, see
// [Names.NATSDurable]) of a handler: TopicPrefix, ServiceName, "." and the
// handler's name. Every replica of the service shares it, so they split
// the handler's work, while each handler consumes every message of its
// topic; environments that share a broker under different prefixes never
// join each other's groups.
func (n Names) ConsumerGroup(handler string) string {
	return n.TopicPrefix + n.ServiceName + "." + handler
}

// AMQPQueue names the durable queue through which handler consumes topic
// on RabbitMQ: TopicPrefix, the topic, "_" and the handler's consumer
// group, as the AMQP transport declares it.
func (n Names) AMQPQueue(topic, handler string) string {
	return n.TopicPrefix + topic + "_" + n.ConsumerGroup(handler)
}

// NATSDurable names the durable consumer, and its queue group, through
// which handler consumes on NATS: [Names.ConsumerGroup] with the
// characters a consumer name cannot hold replaced as in [NATSStream], e.g.
// "onceflow_ship_order".
func (n Names) NATSDurable(handler string) string { return natsName(n.ConsumerGroup(handler)) }

// NATSStream names the JetStream stream of subject, a topic with
// TopicPrefix prepended: the subject with every character a stream name
// cannot hold ('.', '*', '>', '/', '\\' and white space) replaced by '_',
// e.g. "orders.placed" → "orders_placed". Subjects that differ
// only there ("a.b", "a_b") would share a name; the second one's stream
// cannot be created and the NATS transport says so.
func NATSStream(subject string) string { return natsName(subject) }

func natsName(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(".*>/\\", r) || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, s)
}
