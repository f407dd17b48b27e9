// Package amqp is the RabbitMQ transport on watermill-amqp: a durable
// fan-out exchange per topic, a durable queue per handler shared by the
// replicas of the service, publisher confirms, and a first connection
// retried for [Config.ConnectTimeout] (see [New], and preset for the
// message contract with producers outside the service). A handler holds
// its in-flight count of messages at once, in no order between them.
//
// [Config] names the broker and tunes the transport; its errors name the
// settings by what they are ("amqp: missing URL"), never by where they
// came from: the caller adds that, finding what failed with
// [broker.URLError] and [broker.ConnectError].
package amqp
