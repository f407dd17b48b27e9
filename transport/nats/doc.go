// Package nats is the NATS JetStream transport on watermill-nats and
// nats.go: a stream per subject retaining by limits, a durable push
// consumer per handler shared by the replicas of the service as a queue
// group, explicit synchronous acks, and the idempotency key as the
// message's JetStream id, so that a stream drops a copy of one key within
// its duplicate window (see [New] for the message contract with producers
// outside the service). A handler holds its in-flight count of messages at
// once, in no order between them.
//
// [Config] names the server and tunes the transport; its errors name the
// settings by what they are ("nats: missing URL"), never by where they
// came from: the caller adds that.
package nats
