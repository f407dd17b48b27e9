// Package kafka is the Kafka transport: watermill-kafka's publisher and
// marshaling on sarama, and a consumer group subscriber of its own that
// holds several messages in flight per handler while keeping each key's
// order (see [New]). Every handler consumes in a consumer group of its own,
// shared by the replicas of the service; a new group starts from the
// oldest offset, and the offset committed never passes a message not yet
// acked, so a rebalance or a crash redelivers rather than loses.
//
// [Config] names the cluster and tunes the transport; its errors name the
// settings by what they are ("kafka: missing brokers"), never by where
// they came from: the caller adds that.
package kafka
