// Package transport picks the service's broker by kind: [New] opens the
// one a [Config] names — in process ([GoChannel]), [Kafka], RabbitMQ
// ([AMQP]), PostgreSQL ([SQL]), NATS JetStream ([NATS]) or Redis Streams
// ([RedisStream]) — through its package below this one, each with a
// Config of its own, and returns the [broker.Transport] they all build:
// a publisher, a subscriber per handler, a readiness check and Close,
// with the topic prefix applied and the consumer groups named after the
// service and the handler ([broker.Names]).
//
// Each kind is one entry of a table that maps this package's Config into
// its package's; removing a broker is removing its package and its entry.
//
// The package reads no environment: the caller fills a [Config]. Its
// errors, the broker packages', name the settings by what they are, never
// by where they came from; the caller adds that.
package transport
