// Package flow measures the receiver where messages and requests flow
// through the service: throughput of each transport with the receiver on
// and off, at any number of messages in flight ([TransportBench]); the
// whole service, requests per second through one instance on a broker, at
// any HANDLER_CONCURRENCY, beside a plain consumer that only acks
// ([ServiceBench]); lease mode against transaction mode on the sql
// transport ([ModeBench]); and the latency the Idempotency-Key middleware
// adds to POST /v1/charges ([HTTPBench]). The service and HTTP benches run
// the template's own domain, package testdomain.
//
// Each bench is built once and measured in rounds. A transport, mode or
// HTTP round builds its own topics, consumer groups or server; a service
// round publishes to an instance that runs from its first round to Stop.
// Either way rounds of different contenders can be interleaved and their
// medians compared. A round returns its figure (messages or requests per
// second, or microseconds), with what its deliveries' time went to where
// it can tell ([RoundTimes]), and fails rather than return a figure from
// a round in which a message was lost.
//
// The benches use the real services they are given (Kafka, RabbitMQ,
// PostgreSQL, Redis, NATS); PostgreSQL work happens in a schema of the
// bench's own, dropped by Close. A bench is not safe for concurrent
// Rounds.
package flow
