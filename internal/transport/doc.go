// Package transport is the service's brokers behind one shape: a publisher,
// a subscriber per handler, a readiness check and Close. [New] builds the
// one a [Config] names — in process ([GoChannel]), Kafka, RabbitMQ ([AMQP]),
// PostgreSQL ([SQL]), NATS JetStream ([NATS]) or Redis Streams
// ([RedisStream]) — with the topic prefix applied and the consumer groups
// named after the service and the handler ([Config.ConsumerGroup]).
//
// The package reads no environment: the caller fills a [Config]. Its
// errors name the settings by what they are, never by where they came
// from; the caller adds that.
//
// The SQL transport's subscribers consume on
// [exactlyonce.ConsumerBeginner], so that transaction mode's units of work
// join their transactions ([exactlyonce.ConsumerTx]); the outbox relay
// reads with [NewSQLSubscriber] on a pool of [OpenConsumerPool].
package transport
