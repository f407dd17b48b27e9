// Package redisstream is the Redis Streams transport on go-redis: a
// stream per topic, written with watermill-redisstream's publisher and
// entry format, a consumer group per handler shared by the replicas of the
// service, and subscriptions of its own that hold a handler's in-flight
// count of entries, claim a crashed consumer's after the ack deadline and
// hand back their own as they end (see [New] for the message contract
// with producers outside the service). No order holds between the
// entries in flight.
//
// [Config] names the Redis and tunes the transport; its errors name the
// settings by what they are ("redisstream: missing URL"), never by where
// they came from: the caller adds that.
package redisstream
