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
// Transaction mode and the outbox build on the PostgreSQL pieces exported
// here: [OpenConsumerPool], [NewSQLSubscriber], [NewSQLTxPublisher] and
// [ConsumerTx].
package transport
