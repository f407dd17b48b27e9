package transport

// ConsumerGroup names the consumer group (Kafka, SQL, Redis Streams), queue
// (AMQP) or durable consumer (NATS, see [Config.NATSDurable]) of a handler: TopicPrefix, ServiceName, "." and the handler's name. Every
// replica of the service shares it, so they split the handler's work, while
// each handler consumes every message of its topic; environments that share
// a broker under different prefixes never join each other's groups.
func (c Config) ConsumerGroup(handler string) string {
	return c.TopicPrefix + c.ServiceName + "." + handler
}

// AMQPQueue names the durable queue through which handler consumes topic
// on RabbitMQ: TopicPrefix, the topic, "_" and the handler's consumer
// group, as the AMQP transport declares it.
func (c Config) AMQPQueue(topic, handler string) string {
	return c.TopicPrefix + topic + "_" + c.ConsumerGroup(handler)
}
